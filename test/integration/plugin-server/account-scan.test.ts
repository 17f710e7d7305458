/**
 * Automatic migration (`dynamicAccounts.scan`) on a real plugin-server process with a real agent on the real
 * control plane, reading Clouddriver's accounts from a STAND-IN (test/infra/clouddriver-stand-in.ts: no Clouddriver
 * can run here) every second: a new matching account becomes a dynamic account within a round and its agent caches
 * it; a name that does not match is left; a matching account that cannot be converted is refused by name and
 * reason while the others move; a later round moves nothing again and leaves an operator's change alone; a
 * Clouddriver error is a failed round that changes nothing, reported and counted, and the next round succeeds.
 * Two replicas on one MySQL store scanning the same Clouddriver create each account once between them. Rounds are
 * told apart by their start time, never by waiting a fixed time.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScanRound } from '../../../src/plugin-server/accounts/account-scan.js';
import { ClouddriverStandIn } from '../../infra/clouddriver-stand-in.js';
import { createNamespace, createTestDatabase, kubectl, testEnv, waitFor } from '../../infra/index.js';
import { AgentProcess, PluginServerProcess, sendJson } from '../../infra/processes.js';

const dir = mkdtempSync(join(tmpdir(), 'sa-account-scan-'));
const clouddriver = new ClouddriverStandIn();
let server: PluginServerProcess;
let agent: AgentProcess;
let ns: string;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = any;

const api = (method: string, path: string, body?: unknown) => sendJson<Body>(server.httpBase + path, method, body);

const dynamicNames = async (): Promise<string[]> =>
  ((await api('GET', '/armory/accounts?limit=1000')).body.items as { name: string; dynamic?: boolean }[])
    .filter((a) => a.dynamic)
    .map((a) => a.name)
    .sort();

/** The first round that started after now, once it has finished: it read Clouddriver as it is now. */
async function nextRound(on = () => server): Promise<ScanRound> {
  const after = Date.now();
  return waitFor('a scan round started after the change', async () => {
    const round = (await on().get<{ lastRound: ScanRound | null }>('/admin/account-scan')).body.lastRound;
    return round && Date.parse(round.startedAt) >= after ? round : undefined;
  });
}

const watched = (name: string) => ({ name, namespaces: [ns], kinds: ['ConfigMap'] });

beforeAll(async () => {
  ns = await createNamespace('acct-scan');
  await kubectl(['create', 'configmap', 'scanned', '-n', ns, '--from-literal=k=v']);
  await clouddriver.start();
  clouddriver.accounts = [
    watched('moved-one'),
    watched('classic-one'),
    // Clouddriver would never render this; a definition with a key of the wrong type stands for any bad one.
    { ...watched('moved-bad'), namespaces: 'not-a-list' },
  ];
  server = await PluginServerProcess.start({
    dir,
    extra: {
      dynamicAccounts: {
        scan: {
          namePatterns: ['moved-.*', 'team-[a-z]+'],
          frequencySeconds: 1,
          clouddriverUrl: clouddriver.baseUrl,
          // /credentials never shows a kubeconfig: the agents find every moved account's at this path.
          kubeconfigFile: testEnv().kubeconfig,
        },
      },
    },
  });
  agent = await AgentProcess.start({
    dir,
    agentId: 'scan-agent',
    serverAddress: server.grpcAddress,
    accounts: [{ name: 'static-one', kubeconfigFile: testEnv().kubeconfig, namespaces: [ns], kinds: ['ConfigMap'] }],
  });
}, 120_000);

afterAll(async () => {
  await agent?.stop();
  await server?.stop();
  await clouddriver.stop();
});

describe('automatic migration (dynamicAccounts.scan)', () => {
  it('moves a matching account to the agent, leaves one that does not match, and names one it refuses', async () => {
    const round = await waitFor('a round that moved moved-one', async () => {
      const r = (await api('GET', '/admin/account-scan')).body.lastRound as ScanRound | null;
      return r?.result === 'ok' && (await dynamicNames()).includes('moved-one') ? r : undefined;
    });
    expect(await dynamicNames()).toEqual(['moved-one']);
    expect(round.source).toBe(`${clouddriver.baseUrl}/credentials?expand=true`);
    const report = (await api('GET', '/admin/account-scan')).body;
    expect(report.enabled).toBe(true);
    expect(report.lastRound.accounts).toEqual([
      expect.objectContaining({ name: 'moved-bad', action: 'refuse', reason: expect.stringMatching(/namespaces/) }),
    ]);
    expect(await server.metric('scale_agent_plugin_server_account_scan_refused')).toBe(1);

    const account = (await api('GET', '/armory/accounts/moved-one')).body;
    expect(account).toMatchObject({ kubeconfigFile: testEnv().kubeconfig, namespaces: [ns], kinds: ['ConfigMap'] });
    // ACTIVE (dynamicAccounts.scan.state's default): the agent watches it, and its objects are served.
    await waitFor('moved-one cached through the agent', async () => {
      const r = await api('GET', `/admin/cache/moved-one?kind=ConfigMap`);
      return r.status === 200 && (r.body as { name: string }[]).some((o) => o.name === 'scanned');
    });
    expect((await api('GET', '/armory/accounts/moved-one')).body.state).toBe('ACTIVE');
  });

  it('reported the move with the pattern that took it, once', async () => {
    const created = await server.metric('scale_agent_plugin_server_account_scan_accounts_total{outcome="created"}');
    expect(created).toBe(1);
    expect(readFileSync(server.logFile, 'utf8')).toMatch(/automatic migration: account moved to agents/);
  });

  it('a later round moves nothing again and leaves an operator change to a moved account alone', async () => {
    const patched = await api('PATCH', '/armory/accounts', [{ name: 'moved-one', state: 'INACTIVE' }]);
    expect(patched.status).toBe(202);
    const before = (await api('GET', '/armory/accounts/moved-one')).body;
    const round = await nextRound();
    expect(round).toMatchObject({ result: 'ok', counts: { matched: 2, created: 0, refused: 1, present: 1 } });
    expect(round.accounts.map((a) => a.name)).toEqual(['moved-bad']);
    const after = (await api('GET', '/armory/accounts/moved-one')).body;
    expect(after).toMatchObject({ state: 'INACTIVE', lastUpdated: before.lastUpdated });
    expect(await server.metric('scale_agent_plugin_server_account_scan_accounts_total{outcome="created"}')).toBe(1);
  });

  it('a Clouddriver error fails the round and changes nothing; the next round moves what appeared meanwhile', async () => {
    const errorsBefore = await server.metric('scale_agent_plugin_server_account_scans_total{result="error"}');
    clouddriver.failWith = 500;
    clouddriver.accounts = [...clouddriver.accounts, watched('team-blue'), watched('moved-two')];
    const failed = await nextRound();
    expect(failed.result).toBe('error');
    expect(failed.error).toContain(`GET ${clouddriver.baseUrl}/credentials?expand=true: 500`);
    expect(failed.accounts).toEqual([]);
    expect(await dynamicNames()).toEqual(['moved-one']);
    expect(await server.metric('scale_agent_plugin_server_account_scans_total{result="error"}')).toBeGreaterThan(
      errorsBefore,
    );
    expect(readFileSync(server.logFile, 'utf8')).toMatch(/automatic migration: round failed, nothing changed/);

    clouddriver.failWith = undefined;
    const ok = await nextRound();
    expect(ok.result).toBe('ok');
    expect(ok.accounts.filter((a) => a.action === 'create')).toEqual([
      expect.objectContaining({ name: 'team-blue', reason: 'name matches team-[a-z]+' }),
      expect.objectContaining({ name: 'moved-two', reason: 'name matches moved-.*' }),
    ]);
    expect(await dynamicNames()).toEqual(['moved-one', 'moved-two', 'team-blue']);
  });
});

describe('automatic migration with two replicas on one MySQL store', () => {
  const upstream = new ClouddriverStandIn();
  const replicas: PluginServerProcess[] = [];
  let drop: (() => Promise<void>) | undefined;
  const created = '{outcome="created"}';

  beforeAll(async () => {
    await upstream.start();
    const db = await createTestDatabase('account_scan');
    drop = db.drop;
    const extra = {
      dynamicAccounts: {
        scan: {
          namePatterns: ['replica-.*'],
          frequencySeconds: 1,
          clouddriverUrl: upstream.baseUrl,
          kubeconfigFile: '/kubeconfigs/{name}.yaml',
          state: 'INACTIVE',
        },
      },
    };
    const storage = { type: 'mysql' as const, url: db.url };
    replicas.push(
      ...(await Promise.all(
        ['replica-a', 'replica-b'].map((name) => PluginServerProcess.start({ dir, name, storage, extra })),
      )),
    );
  }, 120_000);

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await upstream.stop();
    await drop?.();
  });

  it('each account appearing upstream is created once between them, and both see all of them', async () => {
    const names = Array.from({ length: 20 }, (_, i) => `replica-${String(i).padStart(2, '0')}`);
    upstream.accounts = names.map((name) => ({ name, namespaces: ['default'] }));
    const rounds = await Promise.all(replicas.map((r) => nextRound(() => r)));
    expect(rounds.map((r) => r.result)).toEqual(['ok', 'ok']);
    await waitFor('both replicas list the 20 accounts', async () => {
      for (const r of replicas) {
        const items = (await r.get<{ items: { name: string; dynamic?: boolean }[] }>('/armory/accounts?limit=100')).body
          .items;
        if (items.filter((a) => a.dynamic).length !== names.length) return false;
      }
      return true;
    });
    // A create counted by both replicas would sum to more: the store's conditional insert lets one of them win.
    const counts = await Promise.all(
      replicas.map((r) => r.metric(`scale_agent_plugin_server_account_scan_accounts_total${created}`)),
    );
    expect(counts[0]! + counts[1]!).toBe(names.length);
    const audited = replicas
      .map((r) => readFileSync(r.logFile, 'utf8').split('\n'))
      .flat()
      .filter((l) => l.includes('dynamic account created') && l.includes('"who":"account-scan"'));
    expect(audited).toHaveLength(names.length);
    // And the next rounds on either replica find every account present.
    const again = await Promise.all(replicas.map((r) => nextRound(() => r)));
    expect(again.map((r) => r.counts)).toEqual([
      { matched: 20, created: 0, refused: 0, present: 20 },
      { matched: 20, created: 0, refused: 0, present: 20 },
    ]);
  });
});
