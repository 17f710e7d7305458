/**
 * Two versions of the plugin-server on one MySQL database, as during a rolling upgrade: this checkout (built, in
 * dist/) and an older commit built into a temporary directory. Both orders are run on a fresh database:
 *   - old first: the old replica migrates the empty database, then the new one migrates it further while the old
 *     one keeps serving;
 *   - new first: the new replica migrates the empty database, then an old replica starts against a schema newer
 *     than it knows (as when a rollout is paused or rolled back).
 * In each, a simulated agent streams to each replica and the checks are: both replicas start; both list both
 * accounts; a manifest of each account reads the same on both; a change streamed to the old replica is read on the
 * new one and the reverse; an operation posted to each replica for the account held by the other completes.
 * Not in CI (it needs the old build); prints one JSON line and exits 1 when a check fails.
 *
 *   npm run build && npm run bench:rolling-upgrade [-- --from <commit>]
 *
 * --from defaults to the commit before migration 5 (sa_replica_views) was added. The old checkout reuses this
 * one's node_modules when its package-lock.json is identical; otherwise the script stops and says so.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { FakeAgent } from './fake-agents/fake-agent.js';
import { repoRoot } from './lib/child.js';
import { startPluginServer, type RunningPluginServer } from './lib/plugin-server.js';
import { emit, flags, machineInfo, progress, versions } from './lib/report.js';
import { MIGRATIONS } from '../src/plugin-server/cache/mysql.js';
import { createDatabase, MariaDb } from '../test/infra/mariadb.js';

const f = flags({ from: { type: 'string' } });
const git = (...args: string[]) => execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8' }).trim();

function defaultFrom(): string {
  const added = git('log', '-S', 'sa_replica_views (', '--format=%H', '--', 'src/plugin-server/cache/mysql.ts')
    .split('\n')
    .pop();
  if (!added) throw new Error('cannot find the commit that added migration 5; pass --from');
  return git('rev-parse', `${added}^`);
}

/** The old commit's files in a temporary directory, built with this checkout's node_modules. */
function buildOld(commit: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'scale-agent-old-'));
  execFileSync('sh', ['-c', `git archive ${commit} | tar -x -C ${dir}`], { cwd: repoRoot });
  const lock = (root: string) => readFileSync(join(root, 'package-lock.json'), 'utf8');
  if (lock(dir) !== lock(repoRoot)) {
    throw new Error(`${commit}: package-lock.json differs from this checkout's; run npm ci in ${dir} and build it`);
  }
  symlinkSync(realpathSync(join(repoRoot, 'node_modules')), join(dir, 'node_modules'));
  execFileSync('npm', ['run', 'build'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  return dir;
}

/** Migrations the old commit knows: its MIGRATIONS array's length, counted from its source. */
function oldMigrations(dir: string): number {
  const mod = join(dir, 'dist/src/plugin-server/cache/mysql.js');
  const out = execFileSync(
    process.execPath,
    ['--input-type=module', '-e', `import(${JSON.stringify(mod)}).then((m) => console.log(m.MIGRATIONS.length))`],
    { encoding: 'utf8' },
  );
  return Number(out.trim());
}

async function getJson<T>(base: string, path: string): Promise<T> {
  const res = await fetch(base + path);
  if (!res.ok) throw new Error(`${base}${path}: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
  return (await res.json()) as T;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms ${last}`);
    await sleep(200);
  }
}

async function operationCompletes(poster: RunningPluginServer, account: string, id: string): Promise<string> {
  const body = [
    {
      deployManifest: {
        account,
        moniker: { app: 'upgrade' },
        namespaceOverride: 'bench',
        manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `op-${id}` }, data: {} }],
      },
    },
  ];
  const res = await fetch(`${poster.httpUrl}/kubernetes/ops?clientRequestId=upgrade-${id}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`operation ${id}: HTTP ${res.status} ${await res.text()}`);
  const task = (await res.json()) as { id: string };
  const done = await waitFor(`task ${task.id}`, async () => {
    const t = await getJson<{ status: { completed: boolean; failed: boolean } }>(poster.httpUrl, `/task/${task.id}`);
    return t.status.completed ? t : undefined;
  });
  if (done.status.failed) throw new Error(`operation ${id} failed: ${JSON.stringify(done)}`);
  return task.id;
}

type Version = 'old' | 'new';

async function scenario(serverUrl: string, oldRoot: string, order: Version[]): Promise<Record<string, unknown>> {
  const name = `${order[0]}-first`;
  const db = await createDatabase(serverUrl, `upgrade_${order[0]}`);
  const servers: Partial<Record<Version, RunningPluginServer>> = {};
  const agents: Partial<Record<Version, FakeAgent>> = {};
  const checks: string[] = [];
  try {
    for (const v of order) {
      progress(`${name}: starting the ${v} replica`);
      servers[v] = await startPluginServer({ type: 'mysql', url: db.url }, v === 'old' ? { root: oldRoot } : {});
      checks.push(`${v} replica started`);
      const agent = new FakeAgent({
        address: servers[v].grpcAddress,
        agentId: `upgrade-${v}`,
        accountPrefix: `${name}-${v}`,
        accounts: 1,
        objectsPerAccount: 50,
        objectBytes: 300,
        batchSize: 50,
        heartbeatMs: 1000,
      });
      await agent.connect();
      await agent.sync();
      agents[v] = agent;
    }
    const [oldPs, newPs] = [servers.old!, servers.new!];
    const accounts = { old: agents.old!.accountNames[0]!, new: agents.new!.accountNames[0]! };
    for (const ps of [oldPs, newPs]) {
      await waitFor('both accounts on both replicas', async () => {
        const names = (await getJson<{ name: string }[]>(ps.httpUrl, '/credentials')).map((c) => c.name);
        return names.includes(accounts.old) && names.includes(accounts.new) ? true : undefined;
      });
    }
    checks.push('both replicas list both accounts');
    for (const account of Object.values(accounts)) {
      const path = `/manifests/${account}/bench/${encodeURIComponent('configMap cm-7')}`;
      const [a, b] = await Promise.all([getJson(oldPs.httpUrl, path), getJson(newPs.httpUrl, path)]);
      if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`${path} differs between the replicas`);
    }
    checks.push('manifests of both accounts read the same on both replicas');
    for (const [from, to] of [
      ['old', newPs],
      ['new', oldPs],
    ] as const) {
      const agent = agents[from]!;
      const before = await getJson<{ manifest: { metadata: { resourceVersion: string } } }>(
        to.httpUrl,
        `/manifests/${accounts[from]}/bench/${encodeURIComponent('configMap cm-0')}`,
      );
      // MODIFIED changes to cm-0..49 of its one account: cm-0's resourceVersion moves on.
      await agent.changeBatch(50);
      await agent.drained();
      await waitFor(`a change streamed to the ${from} replica, read on the other`, async () => {
        const now = await getJson<typeof before>(
          to.httpUrl,
          `/manifests/${accounts[from]}/bench/${encodeURIComponent('configMap cm-0')}`,
        );
        return now.manifest.metadata.resourceVersion !== before.manifest.metadata.resourceVersion ? true : undefined;
      });
    }
    checks.push('a change streamed to either replica is read on the other');
    await operationCompletes(newPs, accounts.old, `${name}-to-old`);
    await operationCompletes(oldPs, accounts.new, `${name}-to-new`);
    checks.push('an operation posted to either replica for the other one’s agent completes');
    return { scenario: name, ok: true, checks };
  } catch (e) {
    return { scenario: name, ok: false, checks, error: (e as Error).message };
  } finally {
    for (const a of Object.values(agents)) a.close();
    for (const s of Object.values(servers)) await s.stop();
    await db.drop().catch(() => undefined);
  }
}

if (!existsSync(join(repoRoot, 'dist/src/plugin-server/cache/mysql.js'))) throw new Error('run npm run build first');
const from = String(f.from ?? defaultFrom());
progress(`building ${from} (the old version)`);
const oldRoot = buildOld(from);
const mariadb = process.env.SCALE_AGENT_TEST_MYSQL_URL ? undefined : await MariaDb.start({ log: () => undefined });
const results: Record<string, unknown>[] = [];
try {
  const serverUrl = process.env.SCALE_AGENT_TEST_MYSQL_URL ?? mariadb!.url;
  results.push(await scenario(serverUrl, oldRoot, ['old', 'new']));
  results.push(await scenario(serverUrl, oldRoot, ['new', 'old']));
} finally {
  await mariadb?.stop();
}
const migrations = { old: oldMigrations(oldRoot), new: MIGRATIONS.length };
rmSync(oldRoot, { recursive: true, force: true });
const met = results.every((r) => r.ok === true);
emit({
  name: 'rolling-upgrade',
  params: { from, to: git('rev-parse', 'HEAD'), migrations },
  machine: machineInfo(),
  versions: versions(),
  figures: { scenarios: results },
  goal: { 'every check in both orders': 'passes' },
  met,
});
process.exit(met ? 0 : 1);
