/**
 * Per-user READ through Fiat (`spinnaker.fiat`, docs/spinnaker.md "Accounts and Fiat"): a plugin-server with two
 * agent accounts holding the same application, asked by users Fiat grants different rights, through every family of
 * read routes. Fiat is a STAND-IN (test/infra/fiat-stand-in.ts: a real HTTP server answering Fiat's
 * `GET /authorize/{user}` in UserPermission.View's shape), since Fiat cannot run here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginServer } from '../../../src/plugin-server/server.js';
import { FiatStandIn } from '../../infra/fiat-stand-in.js';
import { account, change, startServer, TestAgent } from './helpers.js';

const A = 'fiat-a';
const B = 'fiat-b';
const LATE = 'fiat-late';
const NS = 'shop';

const meta = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  namespace: NS,
  uid: `uid-${name}`,
  resourceVersion: '1',
  annotations: { 'moniker.spinnaker.io/application': 'shop', 'moniker.spinnaker.io/cluster': 'replicaSet web' },
  ...extra,
});

/** One of each kind a read route family answers about: server group, its pod, load balancer, firewall, job. */
const objects = () => [
  { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, resourceVersion: '1' } },
  {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: meta('web-v001'),
    spec: { replicas: 1, template: { spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } } },
    status: { replicas: 1, readyReplicas: 1, availableReplicas: 1 },
  },
  {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: meta('web-v001-abcde', {
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-v001', uid: 'uid-web-v001', controller: true },
      ],
    }),
    spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] },
    status: { phase: 'Running' },
  },
  {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta('web', {
      annotations: { 'moniker.spinnaker.io/application': 'shop', 'moniker.spinnaker.io/cluster': 'deployment web' },
    }),
    spec: { replicas: 1 },
  },
  { apiVersion: 'v1', kind: 'Service', metadata: meta('web'), spec: { selector: { app: 'web' } } },
  { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: meta('web'), spec: { podSelector: {} } },
  {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: meta('migrate'),
    spec: { template: { spec: { containers: [{ name: 'migrate', image: 'busybox' }] } } },
    status: { succeeded: 1, completionTime: '2026-01-01T00:00:00Z' },
  },
];

/** Lists: a user who may not read B must not see it anywhere in them. */
const LISTS = [
  '/credentials',
  '/credentials?expand=true',
  '/applications',
  '/applications/shop',
  '/applications/shop/clusters',
  '/applications/shop/serverGroups',
  '/applications/shop/serverGroups?expand=true',
  '/serverGroups?applications=shop',
  '/applications/shop/serverGroupManagers',
  '/applications/shop/loadBalancers',
  '/applications/shop/rawResources',
  '/securityGroups',
  '/search?q=web&type=serverGroups',
  '/search?q=web&type=loadBalancers',
  '/search?q=web&type=instances',
];

/** One object (or one account's part) of B: 404 for a user who may not read B, as for an account that is not there. */
const singles = (acct: string) => [
  `/manifests/${acct}/${NS}/deployment%20web`,
  `/credentials/${acct}`,
  `/applications/shop/clusters/${acct}`,
  `/applications/shop/clusters/${acct}/replicaSet%20web`,
  `/applications/shop/clusters/${acct}/replicaSet%20web/kubernetes/serverGroups/replicaSet%20web-v001`,
  `/serverGroups/${acct}/${NS}/replicaSet%20web-v001`,
  `/applications/shop/serverGroups/${acct}/${NS}/replicaSet%20web-v001`,
  `/instances/${acct}/${NS}/pod%20web-v001-abcde`,
  `/securityGroups/${acct}/kubernetes/${NS}/networkPolicy%20web`,
  `/manifests/${acct}/${NS}/replicaSet%20web-v001`,
  `/manifests/${acct}/${NS}/replicaSet/cluster/shop/replicaSet%20web`,
  `/applications/shop/jobs/${acct}/${NS}/job%20migrate`,
];

describe('per-user READ of agent accounts through Fiat (stand-in)', () => {
  const fiat = new FiatStandIn();
  let server: PluginServer;
  let base: string;
  let address: string;
  const agents: TestAgent[] = [];

  const get = async (path: string, user?: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, {
      headers: { ...(user ? { 'X-SPINNAKER-USER': user } : {}), ...headers },
    });
    const text = await res.text();
    const json = res.headers.get('content-type')?.startsWith('application/json');
    return { status: res.status, text, body: (json ? JSON.parse(text) : undefined) as Record<string, unknown> };
  };
  const names = async (user?: string) =>
    ((await get('/credentials', user)).body as unknown as { name: string }[]).map((a) => a.name).sort();

  beforeAll(async () => {
    await fiat.start();
    fiat.users.set('reader', { accounts: { [A]: ['READ'] } });
    fiat.users.set('writer', { accounts: { [A]: ['READ', 'WRITE', 'EXECUTE'], [B]: ['READ', 'WRITE'] } });
    fiat.users.set('nobody', { accounts: {} });
    fiat.users.set('root', { admin: true });
    fiat.users.set('anonymous', { accounts: { [B]: ['READ'] } });
    // The cache period is long, so only the refresh on a miss (missRefreshSeconds: 0 here) can show a new account.
    ({ server, base, address } = await startServer(
      `spinnaker: {fiat: {baseUrl: '${fiat.baseUrl}', cacheSeconds: 600, missRefreshSeconds: 0, timeoutMs: 1000}}`,
    ));
    const agent = new TestAgent(address);
    agents.push(agent);
    await agent.hello([account(A, '10.0.0.1:6443'), account(B, '10.0.0.2:6443')]);
    await agent.batch([...objects().map((o) => change(A, 'ADDED', o)), ...objects().map((o) => change(B, 'ADDED', o))]);
  });
  afterAll(async () => {
    for (const a of agents) a.close();
    await server.stop();
    await fiat.stop();
  });

  it('a user with READ on both accounts sees both in every list and reads each object (the test can see B)', async () => {
    expect(await names('writer')).toEqual([A, B]);
    for (const path of LISTS) {
      const r = await get(path, 'writer');
      expect({ path, status: r.status }).toEqual({ path, status: 200 });
      expect({ path, hasB: r.text.includes(`"${B}"`) }).toEqual({ path, hasB: true });
    }
    for (const path of singles(B))
      expect({ path, status: (await get(path, 'writer')).status }).toEqual({ path, status: 200 });
  });

  it('a READ-only user sees its account and nothing of the other, in every route family', async () => {
    expect(await names('reader')).toEqual([A]);
    for (const path of LISTS) {
      const r = await get(path, 'reader');
      expect({ path, status: r.status, hasB: r.text.includes(B) }).toEqual({ path, status: 200, hasB: false });
    }
    for (const path of singles(B)) {
      const r = await get(path, 'reader');
      expect({ path, status: r.status, code: r.body?.code }).toEqual({ path, status: 404, code: 'SA_ERR_NOT_FOUND' });
    }
    for (const path of singles(A))
      expect({ path, status: (await get(path, 'reader')).status }).toEqual({ path, status: 200 });
    // Clouddriver answers an empty list for a load balancer it does not know; so does an unreadable account's.
    const lb = (acct: string, user: string) => get(`/kubernetes/loadBalancers/${acct}/${NS}/service%20web`, user);
    expect((await lb(B, 'writer')).body).toEqual([expect.objectContaining({ account: B })]);
    expect((await lb(B, 'reader')).body).toEqual([]);
    // The pod property-file route reads an account too (live, through the agent): refused before that.
    expect((await get(`/applications/shop/kubernetes/pods/${B}/${NS}/web-v001-abcde/web`, 'reader')).status).toBe(404);
  });

  it('READ is what counts: X-SPINNAKER-ACCOUNTS (the WRITE list Gate computed at login) neither hides nor shows', async () => {
    // Gate sends a READ-only user's empty WRITE list; the user still reads what Fiat grants READ on.
    expect((await get('/credentials', 'reader', { 'X-SPINNAKER-ACCOUNTS': '' })).text).toContain(A);
    expect((await get(`/credentials/${B}`, 'reader', { 'X-SPINNAKER-ACCOUNTS': `${A},${B}` })).status).toBe(404);
    // ... and cannot write it: operations keep Clouddriver's rule.
    const op = await fetch(`${base}/kubernetes/ops`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-SPINNAKER-USER': 'reader', 'X-SPINNAKER-ACCOUNTS': '' },
      body: JSON.stringify([{ deleteManifest: { account: A, location: NS, manifestName: 'service web' } }]),
    });
    expect(op.status).toBe(403);
  });

  it('a user with no rights, or one Fiat does not know, sees no agent account; an admin sees all', async () => {
    expect(await names('nobody')).toEqual([]);
    expect(await names('stranger')).toEqual([]);
    expect(fiat.lookupsOf('stranger')).toBeGreaterThan(0);
    expect((await get(`/manifests/${A}/${NS}/replicaSet%20web-v001`, 'stranger')).status).toBe(404);
    expect(await names('root')).toEqual([A, B]);
  });

  it('without X-SPINNAKER-USER the request is anonymous, and Fiat is asked about "anonymous"', async () => {
    expect(await names()).toEqual([B]);
    expect(fiat.lookups.filter((l) => l.user === 'anonymous').every((l) => l.header === 'anonymous')).toBe(true);
  });

  it("a user's view is kept between requests: Fiat is not asked again while it names every account", async () => {
    await names('root');
    await names('writer');
    const before = fiat.lookupsOf('writer') + fiat.lookupsOf('root');
    for (let i = 0; i < 5; i += 1) {
      await names('writer');
      await get('/applications/shop/serverGroups', 'root');
    }
    expect(fiat.lookupsOf('writer') + fiat.lookupsOf('root')).toBe(before);
  });

  it('an account registered after the user was looked up is visible at once when Fiat grants it', async () => {
    fiat.users.set('late', { accounts: { [A]: ['READ'], [LATE]: ['READ'] } });
    expect(await names('late')).toEqual([A]);
    const agent = new TestAgent(address);
    agents.push(agent);
    await agent.hello([account(LATE, '10.0.0.3:6443')], 'agent-late');
    await agent.batch(objects().map((o) => change(LATE, 'ADDED', o)));
    // Within the cache period (600 s): the cached view names no LATE, so it is asked for again.
    expect(await names('late')).toEqual([A, LATE].sort());
    expect((await get(`/manifests/${LATE}/${NS}/replicaSet%20web-v001`, 'late')).status).toBe(200);
  });

  it("a user whose rights change sees the change once Fiat's answer is asked again", async () => {
    fiat.users.set('mover', { accounts: { [A]: ['READ'] } });
    expect(await names('mover')).toEqual([A]);
    // B granted: B was missing from the view, so the next read asks Fiat again.
    fiat.users.set('mover', { accounts: { [A]: ['READ'], [B]: ['READ'] } });
    expect(await names('mover')).toEqual([A, B]);
  });

  it('Fiat down: reads of agent accounts fail closed with 503 naming Fiat, counted in scale_agent_fiat_errors_total', async () => {
    await fiat.stop();
    try {
      const r = await get('/applications/shop/serverGroups', 'newcomer');
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({ code: 'SA_ERR_UNAVAILABLE', message: expect.stringContaining(fiat.baseUrl) });
      expect(r.body.message).toMatch(/did not answer for user newcomer/);
      expect((await get(`/manifests/${A}/${NS}/replicaSet%20web-v001`, 'newcomer')).status).toBe(503);
      expect((await get('/credentials', 'newcomer')).status).toBe(503);
      // What reads no account is not held up.
      expect((await get('/healthz')).status).toBe(200);
      const metrics = (await get('/metrics')).text;
      expect(metrics).toMatch(/scale_agent_fiat_errors_total\{reason="connect"\} [1-9]/);
    } finally {
      await fiat.start();
    }
    fiat.failWith = 500;
    try {
      expect((await get('/credentials', 'newcomer')).status).toBe(503);
      expect((await get('/metrics')).text).toMatch(/scale_agent_fiat_errors_total\{reason="status"\} [1-9]/);
    } finally {
      fiat.failWith = undefined;
    }
    fiat.users.set('newcomer', { accounts: { [A]: ['READ'] } });
    expect(await names('newcomer')).toEqual([A]);
  });
});
