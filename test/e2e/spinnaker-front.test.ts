/**
 * Front mode end to end (`spinnaker.upstream`, docs/spinnaker.md): a real plugin-server process in front of a
 * Clouddriver, with a real agent serving one account of the shared control plane, on the memory and the MySQL store.
 *
 * The Clouddriver is a STAND-IN: no Clouddriver can run on these machines, so a small HTTP server in this file
 * answers the routes the plugin-server merges or routes in Clouddriver's shapes (credentials, applications, server
 * groups, search, tasks, POST /kubernetes/ops answered with a task id; written after Clouddriver's controllers and
 * models, not captured from a running one), echoes anything else (to check that method, path, query, headers, body
 * and status pass through), records every request it gets, and can be made slow or stopped. What is asserted is the plugin-server's side: which side answers, what reaches the
 * upstream, and that a slow or stopped upstream never holds up agent accounts. Fiat is a STAND-IN too
 * (test/infra/fiat-stand-in.ts); it grants `anonymous` (the requests that name no user) everything.
 */
import { writeFileSync } from 'node:fs';
import { get as httpGet, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEnv, waitFor } from '../infra/index.js';
import { FiatStandIn } from '../infra/fiat-stand-in.js';
import { HttpStandIn } from '../infra/http-stand-in.js';
import { replicaSet } from '../infra/manifests.js';
import { PluginServerProcess, type AgentProcess } from '../infra/processes.js';
import { startStack, type Stack } from '../infra/stack.js';
import { OpsClient, type Obj } from './operations-helpers.js';

const CLASSIC = 'classic-prod';
const CLASH = 'clash-me';
const AGENT = 'front-agent';

interface Recorded {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** The connection closed before the stand-in answered (the plugin-server let the request go). */
  abandoned?: boolean;
}

/** Clouddriver's answers, in the shapes of CredentialsController, ApplicationsController, SearchController, ... */
const credentials = (expand: boolean) =>
  [CLASSIC, CLASH].map((name) => ({
    name,
    environment: name,
    accountType: name,
    cloudProvider: 'kubernetes',
    type: 'kubernetes',
    providerVersion: 'v2',
    requiredGroupMembership: [],
    permissions: { READ: ['ops'], WRITE: ['ops'] },
    challengeDestructiveActions: false,
    primaryAccount: false,
    ...(expand ? { namespaces: ['default'], kinds: [], omitKinds: [] } : {}),
  }));

const classicApps: Obj[] = [
  {
    name: 'classicapp',
    attributes: { name: 'classicapp' },
    clusterNames: { [CLASSIC]: ['replicaSet classicapp-web'] },
  },
  {
    name: 'sharedapp',
    attributes: { name: 'sharedapp' },
    clusterNames: { [CLASSIC]: ['replicaSet sharedapp-classic'] },
  },
];

const classicApp = (name: string) => ({
  name,
  attributes: { name, cloudProviders: 'kubernetes', email: 'team@example.com' },
  clusters: {
    [CLASSIC]: [{ name: `replicaSet ${name}-web`, loadBalancers: [], serverGroups: [], provider: 'kubernetes' }],
  },
});

const classicServerGroup = (app: string) => ({
  account: CLASSIC,
  cloudProvider: 'kubernetes',
  cluster: `replicaSet ${app}-classic`,
  name: `replicaSet ${app}-classic-v001`,
  region: 'default',
  type: 'kubernetes',
  instanceCounts: { total: 1, up: 1, down: 0, unknown: 0, outOfService: 0, starting: 0 },
  instances: [],
  moniker: { app, cluster: `${app}-classic`, sequence: 1 },
});

const classicTask = {
  id: 'classic-task-1',
  status: {
    phase: 'ORCHESTRATION',
    status: 'Orchestration completed.',
    complete: true,
    completed: true,
    failed: false,
    retryable: false,
  },
  history: [{ phase: 'ORCHESTRATION', status: 'Orchestration completed.' }],
  resultObjects: [],
};

const GZIPPED = gzipSync(JSON.stringify([{ name: 'deployManifest', enabled: true }]));

const korkNotFound = (message: string) => ({ timestamp: Date.now(), status: 404, error: 'Not Found', message });

/** The stand-in Clouddriver. */
class StandIn extends HttpStandIn {
  readonly requests: Recorded[] = [];
  delayMs = 0;

  /** Requests for a path (without the query). */
  seen(path: string): Recorded[] {
    return this.requests.filter((r) => r.url.split('?')[0] === path);
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rec: Recorded = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    };
    this.requests.push(rec);
    res.on('close', () => {
      if (!res.writableFinished) rec.abandoned = true;
    });
    if (this.delayMs > 0) await sleep(this.delayMs);
    if (res.destroyed) return;
    const url = new URL(rec.url, 'http://stand-in');
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    const path = url.pathname;
    let m: RegExpExecArray | null;
    if (rec.method === 'GET' && path === '/credentials')
      return json(200, credentials(url.searchParams.get('expand') === 'true'));
    if (rec.method === 'GET' && path === '/applications') return json(200, classicApps);
    if (rec.method === 'GET' && (m = /^\/applications\/([^/]+)$/.exec(path))) {
      const app = decodeURIComponent(m[1]!);
      return classicApps.some((a) => a.name === app)
        ? json(200, classicApp(app))
        : json(404, korkNotFound(`Application ${app} not found`));
    }
    if (rec.method === 'GET' && (m = /^\/applications\/([^/]+)\/serverGroups$/.exec(path))) {
      const app = decodeURIComponent(m[1]!);
      return json(200, classicApps.some((a) => a.name === app) ? [classicServerGroup(app)] : []);
    }
    if (rec.method === 'GET' && path === '/search') {
      const q = url.searchParams.get('q') ?? '';
      return json(200, [
        {
          totalMatches: 1,
          pageNumber: 1,
          pageSize: 10,
          platform: 'aws',
          query: q,
          results: [
            {
              account: CLASSIC,
              application: 'sharedapp',
              cluster: 'replicaSet sharedapp-classic',
              serverGroup: 'replicaSet sharedapp-classic-v001',
              region: 'default',
              type: 'serverGroups',
              provider: 'kubernetes',
            },
          ],
        },
      ]);
    }
    if (rec.method === 'GET' && path === '/task/classic-task-1') return json(200, classicTask);
    if (rec.method === 'GET' && path.startsWith('/task/')) return json(404, korkNotFound('Task not found'));
    // OperationsController's task actions (resumeTask, updateTask, restartCloudProviderTask, getOwnerName).
    const classicId = { id: 'classic-task-1', resourceUri: '/task/classic-task-1' };
    if (rec.method === 'POST' && path === '/task/classic-task-1:resume') return json(200, classicId);
    if (rec.method === 'PATCH' && path === '/kubernetes/task/classic-task-1') return json(200, classicId);
    if (rec.method === 'POST' && path === '/kubernetes/task/classic-task-1/restart') return json(200, classicId);
    if (rec.method === 'GET' && path === '/kubernetes/task/classic-task-1/owner') {
      return json(200, { name: 'spin-clouddriver-7d9f8-x2x4z' });
    }
    if (rec.method === 'POST' && path === '/kubernetes/ops') {
      return json(200, { id: 'classic-task-1', resourceUri: '/task/classic-task-1' });
    }
    // A body in two parts a moment apart (a large or slow answer), to check that it streams through.
    if (rec.method === 'GET' && path === '/images/find') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('[{"imageName":"first"}');
      await sleep(1500);
      res.end(',{"imageName":"second"}]');
      return;
    }
    // A compressed answer, to check that it passes as sent (not decoded).
    if (rec.method === 'GET' && path === '/features/stages') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(GZIPPED);
      return;
    }
    // Anything else: an echo with an unusual status and a header of its own, to check pass-through.
    return json(
      207,
      { method: rec.method, url: rec.url, body: rec.body, user: req.headers['x-spinnaker-user'] },
      {
        'x-stand-in': 'echo',
      },
    );
  }
}

// Both stores: tasks and agent accounts, which routing looks up, live in the store.
for (const storeType of ['memory', 'mysql'] as const) {
  describe(`front mode (${storeType} store): the plugin-server in front of a (stand-in) Clouddriver`, () => {
    let stack: Stack;
    let ns: string;
    const standIn = new StandIn();
    const fiat = new FiatStandIn();
    let server: PluginServerProcess;
    let agent: AgentProcess;
    let ops: OpsClient;
    let agentTaskId = '';
    /** "replicaSet sharedapp-agent-v000": ReplicaSets are versioned on deploy, as Clouddriver versions them. */
    let agentServerGroup = '';

    const call = async (path: string, init: RequestInit = {}) => {
      const started = Date.now();
      const res = await fetch(server.httpBase + path, init);
      const text = await res.text();
      let body: Obj | Obj[] | undefined;
      try {
        body = text ? (JSON.parse(text) as Obj) : undefined;
      } catch {
        body = { text };
      }
      return { status: res.status, headers: res.headers, body: body as Obj, ms: Date.now() - started };
    };

    beforeAll(async () => {
      await standIn.start();
      await fiat.start();
      fiat.users.set('anonymous', { admin: true });
      stack = await startStack({
        name: `front-${storeType}`,
        store: storeType,
        server: {
          extra: {
            spinnaker: {
              upstream: {
                baseUrl: standIn.baseUrl,
                timeoutMs: 2000,
                connectTimeoutMs: 1000,
                mergeTimeoutMs: 1000,
                accountsRefreshSeconds: 1,
              },
              fiat: { baseUrl: fiat.baseUrl, cacheSeconds: 600, missRefreshSeconds: 0 },
            },
          },
        },
        agent: { accounts: [{ name: AGENT }, { name: CLASH }] },
      });
      ({ server, agent, ns } = stack);
      ops = new OpsClient(server);
      const task = await ops.run([
        {
          deployManifest: {
            account: AGENT,
            cloudProvider: 'kubernetes',
            moniker: { app: 'sharedapp' },
            namespaceOverride: ns,
            manifests: [
              replicaSet('sharedapp-agent', { app: 'sharedapp' }, 0, {
                containers: [{ name: 'main', image: 'nginx:1.19.1' }],
              }),
            ],
          },
        },
      ]);
      agentTaskId = task.id;
      agentServerGroup = (task.resultObjects[0]!.manifestNamesByNamespace as Record<string, string[]>)[ns]![0]!;
    });
    afterAll(async () => {
      await stack?.stop();
      await standIn.stop();
      await fiat.stop();
    });

    it('an agent account whose name the upstream has is refused at registration, with the reason', async () => {
      const accounts = (await (await fetch(`${agent.adminBase}/accounts`)).json()) as Obj[];
      const clash = accounts.find((a) => a.name === CLASH);
      expect(clash).toMatchObject({ state: 'rejected' });
      expect(clash!.rejectedReason).toMatch(/already exists in the upstream Clouddriver/);
      expect(accounts.find((a) => a.name === AGENT)).toMatchObject({ state: expect.not.stringMatching(/rejected/) });
      // A dynamic account of that name is refused when it is defined.
      const dynamic = await call('/armory/accounts/dynamic', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: CLASH, kubeconfigFile: testEnv().kubeconfig }),
      });
      expect(dynamic.status).toBe(409);
      expect(dynamic.body.message).toMatch(/already exists in the upstream Clouddriver/);
      expect(
        await server.metric('scale_agent_plugin_server_account_rejections_total{reason="upstream"}'),
      ).toBeGreaterThanOrEqual(1);
    });

    it('/credentials (plain and expanded) lists both sides, the clashing name once', async () => {
      for (const q of ['', '?expand=true']) {
        const r = await call(`/credentials${q}`);
        expect(r.status).toBe(200);
        const names = (r.body as Obj[]).map((c) => c.name as string).sort();
        expect(names).toEqual([CLASH, CLASSIC, AGENT].sort());
        expect(r.headers.get('x-scale-agent-upstream')).toBeNull();
      }
    });

    it('/applications and /applications/{app} merge both sides; 404 only when neither side knows the app', async () => {
      const apps = (await call('/applications')).body as Obj[];
      expect(apps.map((a) => a.name)).toEqual(['classicapp', 'sharedapp']);
      const shared = apps.find((a) => a.name === 'sharedapp')!;
      expect(Object.keys(shared.clusterNames as Obj).sort()).toEqual([CLASSIC, AGENT].sort());

      const one = await call('/applications/sharedapp');
      expect(one.status).toBe(200);
      expect(Object.keys(one.body.clusters as Obj).sort()).toEqual([CLASSIC, AGENT].sort());
      expect(one.body.attributes).toMatchObject({ email: 'team@example.com', cloudProviders: 'kubernetes' });

      expect((await call('/applications/classicapp')).status).toBe(200);
      const none = await call('/applications/noneapp');
      expect(none.status).toBe(404);
      expect(none.body.code).toBe('SA_ERR_NOT_FOUND');

      const groups = (await call('/applications/sharedapp/serverGroups')).body as Obj[];
      expect(groups.map((g) => g.account as string).sort()).toEqual([CLASSIC, AGENT].sort());

      const search = (await call('/search?q=sharedapp&type=serverGroups')).body as Obj[];
      expect(search).toHaveLength(1);
      const accounts = (search[0]!.results as Obj[]).map((r) => r.account as string);
      expect(accounts).toContain(CLASSIC);
      expect(accounts).toContain(AGENT);
      expect(search[0]!.totalMatches).toBe(accounts.length);
    });

    it("an agent account's views come from the plugin-server, a classic account's from the upstream", async () => {
      // The account refresher reads /credentials meanwhile; every other request is the test's.
      const others = () => standIn.requests.filter((r) => !r.url.startsWith('/credentials')).length;
      const before = others();
      const clusters = await call(`/applications/sharedapp/clusters/${AGENT}`);
      expect(clusters.status).toBe(200);
      const manifest = await call(`/manifests/${AGENT}/${ns}/${encodeURIComponent(agentServerGroup)}`);
      expect(manifest.status).toBe(200);
      expect(manifest.body.account).toBe(AGENT);
      expect(others()).toBe(before);

      const classic = await call(
        `/manifests/${CLASSIC}/default/${encodeURIComponent('replicaSet x-v001')}?includeEvents=false`,
      );
      expect(classic.status).toBe(207);
      expect(classic.headers.get('x-stand-in')).toBe('echo');
      expect(classic.body.url).toBe(`/manifests/${CLASSIC}/default/replicaSet%20x-v001?includeEvents=false`);
    });

    it('requests the plugin-server does not own pass through unchanged: method, path, query, headers, body, status', async () => {
      // An artifact type only Clouddriver can fetch (its artifact accounts hold the credentials); embedded/base64
      // is decoded here.
      const body = JSON.stringify({
        type: 'github/file',
        reference: 'https://api.github.com/repos/o/r/contents/x.yml',
      });
      const r = await call('/artifacts/fetch/?x=1&y=%20z', {
        method: 'PUT',
        headers: { 'content-type': 'application/json', 'x-spinnaker-user': 'alice@example.com', 'x-custom': 'kept' },
        body,
      });
      expect(r.status).toBe(207);
      expect(r.headers.get('x-stand-in')).toBe('echo');
      expect(r.body).toMatchObject({
        method: 'PUT',
        url: '/artifacts/fetch/?x=1&y=%20z',
        body,
        user: 'alice@example.com',
      });
      const seen = standIn.seen('/artifacts/fetch/').at(-1)!;
      expect(seen.headers['x-custom']).toBe('kept');
      expect(seen.headers['content-type']).toBe('application/json');
    });

    it('an embedded artifact is decoded here; an account definition this server does not take goes upstream', async () => {
      const before = standIn.seen('/artifacts/fetch/').length;
      const embedded = await fetch(`${server.httpBase}/artifacts/fetch/`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'embedded/base64', reference: Buffer.from('kind: List\n').toString('base64') }),
      });
      expect(embedded.status).toBe(200);
      expect(await embedded.text()).toBe('kind: List\n');
      expect(standIn.seen('/artifacts/fetch/')).toHaveLength(before);
      // No accounts.management.pattern here: Clouddriver's account management is Clouddriver's, passed on as sent.
      const definition = JSON.stringify({ type: 'kubernetes', name: 'classic-new', kubeconfigFile: '/k/c.yaml' });
      const created = await fetch(`${server.httpBase}/credentials`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-spinnaker-user': 'admin@example.com' },
        body: definition,
      });
      expect(created.status).toBe(207);
      const seen = standIn
        .seen('/credentials')
        .filter((r) => r.method === 'POST')
        .at(-1)!;
      expect(seen.body).toBe(definition);
      expect(seen.headers['x-spinnaker-user']).toBe('admin@example.com');
    });

    it('answers stream through as they come, and compressed answers pass undecoded', async () => {
      const started = Date.now();
      const res = await fetch(`${server.httpBase}/images/find?q=x`);
      const reader = res.body!.getReader();
      const first = await reader.read();
      const firstAt = Date.now() - started;
      let text = new TextDecoder().decode(first.value);
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
      expect(firstAt).toBeLessThan(1200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
      expect(JSON.parse(text)).toEqual([{ imageName: 'first' }, { imageName: 'second' }]);

      const raw = await new Promise<{ headers: IncomingMessage['headers']; body: Buffer }>((resolve, reject) => {
        httpGet(`${server.httpBase}/features/stages`, { headers: { 'accept-encoding': 'gzip' } }, (r) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => resolve({ headers: r.headers, body: Buffer.concat(chunks) }));
        }).on('error', reject);
      });
      expect(raw.headers['content-encoding']).toBe('gzip');
      expect(raw.body.equals(GZIPPED)).toBe(true);
    });

    it('operations go to the side that owns their accounts; mixed is refused; tasks are routed by owner', async () => {
      const classicOp = `[{"deployManifest":{"account":"${CLASSIC}","cloudProvider":"kubernetes","manifests":[{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"}}]}}]`;
      const r = await call('/kubernetes/ops?clientRequestId=abc', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-spinnaker-user': 'alice@example.com' },
        body: classicOp,
      });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ id: 'classic-task-1', resourceUri: '/task/classic-task-1' });
      const seen = standIn.seen('/kubernetes/ops').at(-1)!;
      expect(seen.body).toBe(classicOp);
      expect(seen.url).toBe('/kubernetes/ops?clientRequestId=abc');
      expect(seen.headers['x-spinnaker-user']).toBe('alice@example.com');

      const mixed = await call('/kubernetes/ops', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify([
          { deleteManifest: { account: CLASSIC, location: 'default', manifestName: 'configMap c' } },
          { deleteManifest: { account: AGENT, location: ns, manifestName: 'configMap c' } },
        ]),
      });
      expect(mixed.status).toBe(400);
      expect(mixed.body.message).toMatch(/cannot mix agent accounts \(front-agent\) with accounts of the upstream/);

      // The agent's deploy ran here (beforeAll): its task is read here, the stand-in never saw it.
      const local = await call(`/task/${agentTaskId}`);
      expect(local.status).toBe(200);
      expect(local.body.status.completed).toBe(true);
      expect(standIn.seen(`/task/${agentTaskId}`)).toEqual([]);
      expect(standIn.seen('/kubernetes/ops').every((s) => !s.body.includes(AGENT))).toBe(true);
      const classic = await call('/task/classic-task-1');
      expect(classic.status).toBe(200);
      expect(classic.body).toEqual(classicTask);
    });

    it("with Fiat: a READ-only user sees the agent account beside the upstream's; one registered later shows without a new login", async () => {
      fiat.users.set('reader', { accounts: { [AGENT]: ['READ'], [CLASSIC]: ['READ'] } });
      fiat.users.set('nobody', { accounts: { [CLASSIC]: ['READ'] } });
      // Gate sends a READ-only user's (empty) WRITE list: it hides nothing.
      const as = (user: string) => ({ headers: { 'x-spinnaker-user': user, 'x-spinnaker-accounts': '' } });
      const names = async (user: string) =>
        ((await call('/credentials', as(user))).body as unknown as Obj[]).map((a) => a.name as string).sort();
      // The upstream's part is the stand-in's (Clouddriver filters it by its own Fiat); the agent account is ours.
      expect(await names('reader')).toEqual([AGENT, CLASSIC, CLASH].sort());
      expect(await names('nobody')).toEqual([CLASSIC, CLASH].sort());
      const sgs = (await call('/applications/sharedapp/serverGroups', as('reader'))).body as unknown as Obj[];
      expect(sgs.map((g) => g.account).sort()).toEqual([AGENT, CLASSIC].sort());
      const hidden = (await call('/applications/sharedapp/serverGroups', as('nobody'))).body as unknown as Obj[];
      expect(hidden.map((g) => g.account)).toEqual([CLASSIC]);
      expect(
        (await call(`/manifests/${AGENT}/${ns}/${encodeURIComponent(agentServerGroup)}`, as('nobody'))).status,
      ).toBe(404);
      // Routing by account is unchanged: the hidden agent account's read was answered here, not passed on.
      expect(standIn.requests.filter((r) => r.url.startsWith(`/manifests/${AGENT}`))).toEqual([]);

      const late = `front-late-${storeType}`;
      fiat.users.set('reader', { accounts: { [AGENT]: ['READ'], [CLASSIC]: ['READ'], [late]: ['READ'] } });
      const lateAgent = await stack.addAgent({
        agentId: 'agent-late',
        // A namespace with no application in it, so the late account adds nothing to the views other tests read.
        accounts: [{ name: late, namespaces: ['kube-public'] }],
      });
      try {
        await waitFor(
          'the late account to register',
          async () => (await call(`/armory/accounts/${late}`)).status === 200,
        );
        expect(await names('reader')).toContain(late);
        expect(await names('nobody')).not.toContain(late);
      } finally {
        await lateAgent.stop();
      }
    });

    it("every task route goes to the side that holds the task: Orca's resume, forced retry, restart, owner", async () => {
      const json = { 'content-type': 'application/json' };
      const restartBody = JSON.stringify([{ deployManifest: { account: CLASSIC, manifests: [] } }]);
      const classic = [
        { method: 'POST', path: '/task/classic-task-1:resume' },
        { method: 'PATCH', path: '/kubernetes/task/classic-task-1', body: '{"retry":true}' },
        { method: 'POST', path: '/kubernetes/task/classic-task-1/restart', body: restartBody },
      ];
      for (const { method, path, body } of classic) {
        const r = await call(path, { method, ...(body ? { headers: json, body } : {}) });
        expect({ path, status: r.status, body: r.body }).toEqual({
          path,
          status: 200,
          body: { id: 'classic-task-1', resourceUri: '/task/classic-task-1' },
        });
        // What Orca sent reached Clouddriver as sent.
        expect(standIn.seen(path).at(-1)).toMatchObject({ method, body: body ?? '' });
      }
      expect((await call('/kubernetes/task/classic-task-1/owner')).body).toEqual({
        name: 'spin-clouddriver-7d9f8-x2x4z',
      });

      // The agent's task is answered here, and none of these reaches the upstream.
      const owner = await call(`/kubernetes/task/${agentTaskId}/owner`);
      expect(owner.status).toBe(200);
      expect(owner.body.name).toEqual(expect.any(String));
      // Orca's body is {"retry": ...}; anything else is refused here, as the task is this server's.
      const invented = await call(`/kubernetes/task/${agentTaskId}`, {
        method: 'PATCH',
        headers: json,
        body: '{"retryable":true}',
      });
      expect(invented.status).toBe(400);
      expect(invented.body.message).toMatch(/takes \{"retry": true\|false\}/);
      // Succeeded: nothing to resume or restart (409, as Clouddriver refuses a task that is not retryable).
      expect((await call(`/task/${agentTaskId}:resume`, { method: 'POST' })).status).toBe(409);
      const restart = await call(`/kubernetes/task/${agentTaskId}/restart`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify([
          {
            deployManifest: {
              account: AGENT,
              cloudProvider: 'kubernetes',
              moniker: { app: 'sharedapp' },
              namespaceOverride: ns,
              manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'never' }, data: {} }],
            },
          },
        ]),
      });
      expect({ status: restart.status, message: restart.body.message }).toEqual({
        status: 409,
        message: expect.stringMatching(/cannot be restarted: only a failed, retryable task can \(it has succeeded\)/),
      });
      expect(standIn.requests.filter((r) => r.url.includes(agentTaskId))).toEqual([]);
      // A task neither side has goes to the upstream (which the stand-in answers with its echo).
      const missing = await call('/task/no-such-task:resume', { method: 'POST' });
      expect(missing.status).toBe(207);
      expect(standIn.seen('/task/no-such-task:resume')).toHaveLength(1);
    });

    it('with REST authentication, routes the plugin-server lacks are the Clouddriver surface (trusted networks)', async () => {
      const tokens = join(stack.dir, 'rest-tokens');
      writeFileSync(tokens, 'front-admin-token ops admin\n');
      const authed = await PluginServerProcess.start({
        dir: stack.dir,
        name: 'plugin-server-auth',
        extra: {
          http: { auth: { tokensFile: tokens, trustedNetworks: ['127.0.0.1/32'] } },
          spinnaker: { upstream: { baseUrl: standIn.baseUrl } },
        },
      });
      try {
        const proxied = await fetch(`${authed.httpBase}/artifacts/account/x`);
        expect(proxied.status).toBe(207);
        expect(proxied.headers.get('x-stand-in')).toBe('echo');
        expect((await fetch(`${authed.httpBase}/armory/agents`)).status).toBe(401);
        expect((await fetch(`${authed.httpBase}/admin/nothing`)).status).toBe(401);
        const admin = await fetch(`${authed.httpBase}/admin/nothing`, {
          headers: { authorization: 'Bearer front-admin-token' },
        });
        expect(admin.status).toBe(404);
        expect(standIn.seen('/admin/nothing')).toEqual([]);
      } finally {
        await authed.stop();
      }
    });

    it('a slow upstream: merged lists answer with the local part and the warning header, proxied requests 504', async () => {
      standIn.delayMs = 4000;
      try {
        const r = await call('/applications');
        expect(r.status).toBe(200);
        expect(r.ms).toBeLessThan(3000);
        expect(r.headers.get('x-scale-agent-upstream')).toBe('unavailable');
        expect((r.body as Obj[]).map((a) => a.name)).toEqual(['sharedapp']);

        const p = await call(`/manifests/${CLASSIC}/default/${encodeURIComponent('replicaSet x-v001')}`);
        expect(p.status).toBe(504);
        expect(p.ms).toBeLessThan(3500);
        expect(p.body).toMatchObject({ status: 504, error: 'Gateway Timeout', code: 'SA_ERR_TIMEOUT' });

        // A caller that hangs up releases the upstream request at once, long before the upstream would answer.
        await fetch(`${server.httpBase}/artifacts/abandoned`, { signal: AbortSignal.timeout(300) }).catch(
          () => undefined,
        );
        // Within 1 s of hanging up: well before timeoutMs (2 s), which would release it too.
        await waitFor('the upstream request released', () => standIn.seen('/artifacts/abandoned')[0]?.abandoned, 1000);
      } finally {
        standIn.delayMs = 0;
      }
      expect(await server.metric('scale_agent_upstream_errors_total{reason="timeout",use="merge"}')).toBeGreaterThan(0);
      expect(await server.metric('scale_agent_upstream_errors_total{reason="timeout",use="proxy"}')).toBeGreaterThan(0);
    });

    it('a stopped upstream: agent accounts keep working, merged lists answer the local part, proxied requests 502', async () => {
      await standIn.stop();
      const creds = await call('/credentials');
      expect(creds.status).toBe(200);
      expect(creds.ms).toBeLessThan(2000);
      expect(creds.headers.get('x-scale-agent-upstream')).toBe('unavailable');
      // The agent accounts only (the Fiat test's late account is one of them), none of the upstream's.
      const names = (creds.body as Obj[]).map((c) => c.name);
      expect(names).toContain(AGENT);
      expect(names).not.toContain(CLASSIC);

      const app = await call('/applications/sharedapp');
      expect(app.status).toBe(200);
      expect(Object.keys(app.body.clusters as Obj)).toEqual([AGENT]);

      const manifest = await call(`/manifests/${AGENT}/${ns}/${encodeURIComponent(agentServerGroup)}`);
      expect(manifest.status).toBe(200);

      const proxied = await call('/artifacts/credentials');
      expect(proxied.status).toBe(502);
      expect(proxied.body).toMatchObject({ status: 502, error: 'Bad Gateway', code: 'SA_ERR_BAD_GATEWAY' });
      expect(proxied.body.message).toMatch(/upstream Clouddriver .* is unreachable/);

      const unknownTask = await call('/task/not-here');
      expect(unknownTask.status).toBe(502);
      await waitFor('an agent task still readable', async () => (await call(`/task/${agentTaskId}`)).status === 200);
    });
  });
}
