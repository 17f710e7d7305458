/**
 * Spinnaker's read views at scale: N accounts × 1,000 objects (simulated agents speaking the real protocol into the
 * real plugin-server), then the latency of the reads Deck makes most, for an application of 100 server groups
 * spread over 100 accounts: `/applications/{app}/serverGroups?expand=true`, `/applications/{app}/clusters`,
 * `/search` by server group name, `/credentials?expand=true`. Baseline: the same run's single `GET /manifests`
 * read. With the memory store, also the server's RSS after the sync against a sync of the same number of
 * ConfigMaps of the same size (objects the application index ignores), which bounds what the index costs.
 *
 *   npx tsx bench/spinnaker-views.ts [--quick] [--accounts 1000] [--samples 100] [--stores memory,mysql]
 */
import { FakeAgent, type FakeObject } from './fake-agents/fake-agent.js';
import { procStats } from './lib/child.js';
import { configMapJson } from './lib/objects.js';
import { startPluginServer } from './lib/plugin-server.js';
import { distribution, emit, flags, machineInfo, progress, versions } from './lib/report.js';
import { createDatabase, MariaDb } from '../test/infra/mariadb.js';

const f = flags({
  accounts: { type: 'string', default: '1000' },
  samples: { type: 'string', default: '100' },
  stores: { type: 'string', default: 'memory,mysql' },
});
const ACCOUNTS = f.quick ? 20 : Number(f.accounts);
const SAMPLES = f.quick ? 20 : Number(f.samples);
const STORES = String(f.stores).split(',') as ('memory' | 'mysql')[];
const ACCOUNTS_PER_AGENT = 100;
const SG_PER_ACCOUNT = 50;
const OBJECTS_PER_ACCOUNT = 1000;
/** Each application has one server group in each of 100 accounts. */
const APPS = Math.max(1, (ACCOUNTS * SG_PER_ACCOUNT) / 100);

const RS = { group: 'apps', version: 'v1', kind: 'ReplicaSet', resource: 'replicasets', namespaced: true };
const POD = { group: '', version: 'v1', kind: 'Pod', resource: 'pods', namespaced: true };
const SVC = { group: '', version: 'v1', kind: 'Service', resource: 'services', namespaced: true };
const CM = { group: '', version: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespaced: true };
const created = '2026-01-01T00:00:00Z';

const accountIndex = new Map<string, number>();
function indexOf(account: string): number {
  let i = accountIndex.get(account);
  if (i === undefined) accountIndex.set(account, (i = accountIndex.size));
  return i;
}

const json = (o: unknown) => Buffer.from(JSON.stringify(o));

/** 50 ReplicaSets of 50 applications with 2 Running Pods each, 50 Services, and ConfigMaps up to 1,000 objects. */
function workload(account: string): FakeObject[] {
  const a = indexOf(account);
  const out: FakeObject[] = [];
  const ns = 'bench';
  for (let j = 0; j < SG_PER_ACCOUNT; j++) {
    const app = `app${(a * SG_PER_ACCOUNT + j) % APPS}`;
    const name = `${app}-web-v${String(a % 1000).padStart(3, '0')}`;
    const uid = `${account}-rs-${j}`;
    const annotations = {
      'moniker.spinnaker.io/application': app,
      'moniker.spinnaker.io/cluster': `replicaSet ${app}-web`,
      'traffic.spinnaker.io/load-balancers': `["service ${app}-svc"]`,
    };
    out.push({
      kind: RS,
      namespace: ns,
      name,
      uid,
      json: json({
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        metadata: { name, namespace: ns, uid, creationTimestamp: created, annotations, labels: { tier: app } },
        spec: {
          replicas: 2,
          selector: { matchLabels: { tier: app } },
          template: {
            metadata: { labels: { tier: app }, annotations },
            spec: { containers: [{ name: 'main', image: `registry.example.com/${app}:1.0.${a}` }] },
          },
        },
        status: { replicas: 2, readyReplicas: 2, availableReplicas: 2 },
      }),
    });
    for (let p = 0; p < 2; p++) {
      const pod = `${name}-p${p}`;
      out.push({
        kind: POD,
        namespace: ns,
        name: pod,
        uid: `${uid}-pod-${p}`,
        json: json({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            name: pod,
            namespace: ns,
            uid: `${uid}-pod-${p}`,
            creationTimestamp: created,
            labels: { tier: app },
            annotations,
            ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name, uid, controller: true }],
          },
          spec: { containers: [{ name: 'main', image: `registry.example.com/${app}:1.0.${a}` }] },
          status: { phase: 'Running', containerStatuses: [{ name: 'main', ready: true }] },
        }),
      });
    }
    const svc = `${app}-svc`;
    out.push({
      kind: SVC,
      namespace: ns,
      name: svc,
      uid: `${account}-svc-${j}`,
      json: json({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {
          name: svc,
          namespace: ns,
          uid: `${account}-svc-${j}`,
          creationTimestamp: created,
          annotations: { 'moniker.spinnaker.io/application': app },
        },
        spec: { selector: { tier: app }, ports: [{ port: 80 }] },
      }),
    });
  }
  for (let i = out.length; i < OBJECTS_PER_ACCOUNT; i++) {
    const name = `cm-${i}`;
    out.push({
      kind: CM,
      namespace: ns,
      name,
      uid: `${account}-${name}`,
      json: configMapJson({ namespace: ns, name, resourceVersion: '1', bytes: 600 }),
    });
  }
  return out;
}

/** The same number of objects, all ConfigMaps of the workload's average size: nothing for the index. */
function plainWorkload(account: string): FakeObject[] {
  const objects = workload(account);
  const bytes = Math.round(objects.reduce((n, o) => n + o.json.length, 0) / objects.length);
  return objects.map((o, i) => {
    const name = `plain-${i}`;
    return {
      kind: CM,
      namespace: 'bench',
      name,
      uid: `${account}-${name}`,
      json: configMapJson({ namespace: 'bench', name, resourceVersion: '1', bytes }),
    };
  });
}

async function timed(url: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url);
  const body = await res.arrayBuffer();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${Buffer.from(body).toString().slice(0, 200)}`);
  return ms;
}

async function sample(url: string, check: (body: unknown) => void): Promise<ReturnType<typeof distribution>> {
  check(await (await fetch(url)).json());
  const out: number[] = [];
  for (let i = 0; i < SAMPLES; i++) out.push(await timed(url));
  return distribution(out);
}

async function syncFleet(storage: Record<string, unknown>, load: (account: string) => FakeObject[]) {
  accountIndex.clear();
  const ps = await startPluginServer(storage);
  const t0 = performance.now();
  const agents: FakeAgent[] = [];
  for (let i = 0; i * ACCOUNTS_PER_AGENT < ACCOUNTS; i++) {
    agents.push(
      new FakeAgent({
        address: ps.grpcAddress,
        agentId: `views-${i}`,
        accounts: Math.min(ACCOUNTS_PER_AGENT, ACCOUNTS - i * ACCOUNTS_PER_AGENT),
        objectsPerAccount: OBJECTS_PER_ACCOUNT,
        objectBytes: 600,
        batchSize: 500,
        workload: load,
        heartbeatMs: 10_000,
      }),
    );
  }
  // Account indexes follow the agents' order, so every run lays out the same applications.
  for (const a of agents) for (const name of a.accountNames) indexOf(name);
  for (const a of agents) await a.connect();
  await Promise.all(agents.map((a) => a.sync()));
  const stop = async () => {
    for (const a of agents) a.close();
    await ps.stop();
  };
  return { ps, stop, names: agents.flatMap((a) => a.accountNames), syncMs: performance.now() - t0 };
}

const figures: Record<string, unknown> = {};
const baseline: Record<string, unknown> = {};
const ratios: Record<string, number> = {};
let met = true;
const mariadb =
  STORES.includes('mysql') && !process.env.SCALE_AGENT_TEST_MYSQL_URL
    ? await MariaDb.start({ log: () => undefined })
    : undefined;
try {
  for (const store of STORES) {
    const storage =
      store === 'mysql'
        ? {
            type: 'mysql',
            url: (await createDatabase(process.env.SCALE_AGENT_TEST_MYSQL_URL ?? mariadb!.url, 'bench_views')).url,
          }
        : { type: 'memory' };
    progress(`${store}: syncing ${ACCOUNTS} accounts × ${OBJECTS_PER_ACCOUNT} objects`);
    const { ps, stop, names, syncMs } = await syncFleet(storage, workload);
    try {
      const app = 'app0';
      const base = `${ps.httpUrl}`;
      const probes = {
        serverGroupsExpanded: await sample(`${base}/applications/${app}/serverGroups?expand=true`, (b) => {
          const rows = b as { instances: unknown[] }[];
          if (rows.length !== Math.min(100, ACCOUNTS))
            throw new Error(`expected 100 server groups, got ${rows.length}`);
          if (rows.some((r) => r.instances.length !== 2)) throw new Error('a server group lacks its 2 instances');
        }),
        clusters: await sample(`${base}/applications/${app}/clusters`, (b) => {
          if (Object.keys(b as object).length !== Math.min(100, ACCOUNTS)) throw new Error('expected 100 accounts');
        }),
        search: await sample(`${base}/search?q=${app}-web-v000&type=serverGroups`, (b) => {
          const [set] = b as { results: unknown[] }[];
          if (!set || set.results.length < 1) throw new Error('search found nothing');
        }),
        credentialsExpanded: await sample(`${base}/credentials?expand=true`, (b) => {
          if ((b as unknown[]).length !== ACCOUNTS) throw new Error(`expected ${ACCOUNTS} accounts`);
        }),
      };
      const manifest = await sample(
        `${base}/manifests/${names[0]}/bench/${encodeURIComponent('configMap cm-999')}`,
        () => {},
      );
      const limit = store === 'memory' ? 50 : 200;
      const worst = Math.max(
        probes.serverGroupsExpanded.p99,
        probes.clusters.p99,
        probes.search.p99,
        probes.credentialsExpanded.p99,
      );
      if (worst > limit) met = false;
      figures[store] = { syncMs: Math.round(syncMs), ...probes };
      baseline[store] = { manifestRead: manifest };
      for (const [k, v] of Object.entries(probes))
        ratios[`${store}.${k}.p99VsManifestRead`] = Math.round((v.p99 / manifest.p99) * 10) / 10;
      if (store === 'memory') {
        const indexed = (await procStats(ps.child.pid!)).rssBytes;
        await stop();
        progress('memory: the same number of plain ConfigMaps, for the index cost');
        const plain = await syncFleet(storage, plainWorkload);
        const plainRss = (await procStats(plain.ps.child.pid!)).rssBytes;
        await plain.stop();
        figures.memoryRssBytes = { withIndexedWorkload: indexed, plainConfigMaps: plainRss };
        ratios.memoryRssIndexedVsPlain = Math.round((indexed / plainRss) * 100) / 100;
        if (indexed / plainRss > 1.2) met = false;
      }
    } finally {
      await stop();
    }
  }
} finally {
  await mariadb?.stop();
}

emit({
  name: 'spinnaker-views',
  params: {
    accounts: ACCOUNTS,
    objectsPerAccount: OBJECTS_PER_ACCOUNT,
    serverGroupsPerApp: Math.min(100, ACCOUNTS),
    samples: SAMPLES,
    stores: STORES,
  },
  machine: machineInfo(),
  versions: versions(),
  figures,
  baseline,
  ratios,
  goal: {
    'p99 (ms), memory store': '<= 50',
    'p99 (ms), MySQL store': '<= 200',
    'RSS with index vs plain objects': '<= 1.2',
  },
  met,
});
