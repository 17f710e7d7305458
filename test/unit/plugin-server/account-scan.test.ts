/**
 * dynamicAccounts.scan on an in-process plugin-server (memory store) reading a Clouddriver STAND-IN
 * (test/infra/clouddriver-stand-in.ts): a dry run reports what it would move and writes nothing; in front mode the
 * scan reads the upstream it fronts, and a name the scan moves is no clash with the upstream's copy of it while any
 * other upstream name still is. The real-process cases are in test/integration/plugin-server/account-scan.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PluginServer } from '../../../src/plugin-server/server.js';
import { ClouddriverStandIn } from '../../infra/clouddriver-stand-in.js';
import { sendJson } from '../../infra/processes.js';
import { startServer } from './helpers.js';

const clouddriver = new ClouddriverStandIn();
let server: PluginServer | undefined;

beforeAll(() => clouddriver.start());
afterAll(() => clouddriver.stop());
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

describe('dynamicAccounts.scan', () => {
  it('a dry run reports what it would move, round after round, and writes nothing', async () => {
    clouddriver.accounts = [
      { name: 'dry-one', namespaces: ['web'] },
      { name: 'other', namespaces: ['web'] },
    ];
    const started = await startServer(
      `dynamicAccounts: {scan: {namePatterns: [dry-.*], dryRun: true, clouddriverUrl: "${clouddriver.baseUrl}", ` +
        'kubeconfigFile: "/kubeconfigs/{name}.yaml", frequencySeconds: 3600}}',
    );
    server = started.server;
    for (let i = 0; i < 2; i++) {
      const round = await server.accountScan.round();
      expect(round).toMatchObject({ result: 'ok', dryRun: true, counts: { matched: 1, created: 1, present: 0 } });
      expect(round.accounts).toEqual([
        expect.objectContaining({ name: 'dry-one', action: 'create', reason: 'name matches dry-.*' }),
      ]);
    }
    expect(server.dynamic.has('dry-one')).toBe(false);
    expect((await sendJson(`${started.base}/armory/accounts/dry-one`, 'GET')).status).toBe(404);
    expect(started.logs.join('\n')).toMatch(/would move account to agents \(dry run\)/);
  });

  it('in front mode reads the upstream, and a name it moves is no clash with the upstream copy', async () => {
    clouddriver.accounts = [
      { name: 'moved-x', namespaces: ['web'] },
      { name: 'moved-y', namespaces: ['web'] },
      { name: 'classic', namespaces: ['web'] },
    ];
    const started = await startServer(
      `spinnaker: {upstream: {baseUrl: "${clouddriver.baseUrl}", accountsRefreshSeconds: 3600}}\n` +
        'dynamicAccounts: {scan: {namePatterns: [moved-x], kubeconfigFile: /k, frequencySeconds: 3600}}',
    );
    server = started.server;
    const round = await server.accountScan.round();
    expect(round.source).toBe(`${clouddriver.baseUrl}/credentials?expand=true`);
    expect(server.dynamic.has('moved-x')).toBe(true);

    // The upstream has all three; only the name the scan claims may be an agent account here.
    const define = (name: string) =>
      sendJson(`${started.base}/armory/accounts/dynamic`, 'POST', { name, kubeconfigFile: '/k' });
    expect((await define('moved-y')).status).toBe(409);
    expect((await define('classic')).status).toBe(409);
    await sendJson(`${started.base}/armory/accounts/moved-x`, 'DELETE');
    expect((await define('moved-x')).status).toBe(201);
  });
});
