/**
 * Spinnaker's read views at scale: N accounts × 1,000 objects (simulated agents speaking the real protocol into the
 * real plugin-server), then the latency of the reads Deck makes most, for an application of 100 server groups
 * spread over 100 accounts: `/applications/{app}/serverGroups?expand=true`, `/applications/{app}/clusters`,
 * `/search` by server group name, `/credentials?expand=true`. Baseline: the same run's single `GET /manifests`
 * read. With the memory store, also the server's RSS after the sync against a sync of the same number of
 * ConfigMaps of the same size (objects the application index ignores), which bounds what the index costs.
 *
 *   npx tsx bench/spinnaker-views.ts [--quick] [--accounts 1000] [--samples 100] [--stores memory,mysql,postgres]
 */
import { FakeAgent, type FakeObject } from './fake-agents/fake-agent.js';
import { procStats } from './lib/child.js';
import { startPluginServer } from './lib/plugin-server.js';
import { SpinnakerWorkload } from './lib/spinnaker-workload.js';
import { distribution, emit, flags, machineInfo, progress, versions } from './lib/report.js';
import { createDatabase, MariaDb } from '../test/infra/mariadb.js';
import { createPostgresDatabase, testPostgres } from '../test/infra/postgres.js';

const f = flags({
  accounts: { type: 'string', default: '1000' },
  samples: { type: 'string', default: '100' },
  stores: { type: 'string', default: 'memory,mysql,postgres' },
});
const ACCOUNTS = f.quick ? 20 : Number(f.accounts);
const SAMPLES = f.quick ? 20 : Number(f.samples);
const STORES = String(f.stores).split(',') as ('memory' | 'mysql' | 'postgres')[];
const ACCOUNTS_PER_AGENT = 100;
const OBJECTS_PER_ACCOUNT = 1000;

const WORKLOAD = new SpinnakerWorkload(ACCOUNTS, OBJECTS_PER_ACCOUNT);

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
  WORKLOAD.reset();
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
  for (const a of agents) for (const name of a.accountNames) WORKLOAD.indexOf(name);
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
const postgres = STORES.includes('postgres') ? await testPostgres() : undefined;
try {
  for (const store of STORES) {
    const storage =
      store === 'mysql'
        ? {
            type: 'mysql',
            url: (await createDatabase(process.env.SCALE_AGENT_TEST_MYSQL_URL ?? mariadb!.url, 'bench_views')).url,
          }
        : store === 'postgres'
          ? { type: 'postgres', url: (await createPostgresDatabase(postgres!.url, 'bench_views')).url }
          : { type: 'memory' };
    progress(`${store}: syncing ${ACCOUNTS} accounts × ${OBJECTS_PER_ACCOUNT} objects`);
    const { ps, stop, names, syncMs } = await syncFleet(storage, (a) => WORKLOAD.objects(a));
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
        const plain = await syncFleet(storage, (a) => WORKLOAD.plain(a));
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
  await postgres?.stop();
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
    'p99 (ms), PostgreSQL store': '<= 200',
    'RSS with index vs plain objects': '<= 1.2',
  },
  met,
});
