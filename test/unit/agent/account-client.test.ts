import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { AccountRunner } from '../../../src/agent/account.js';
import { AgentMetrics } from '../../../src/agent/metrics.js';
import { createLogger } from '../../../src/shared/logging.js';
import { agentAccount } from '../../infra/records.js';

/** A kubeconfig for an API server nobody dials here: loading a client reads the file and opens no connection. */
function writeKubeconfig(file: string): void {
  writeFileSync(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443', 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'u', user: { token: 'not-a-secret' } }],
      contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'ctx',
    }),
  );
}

function runner(kubeconfigFile: string): AccountRunner {
  const config = agentAccount({ name: 'a', kubeconfigFile });
  return new AccountRunner(config, {
    logger: createLogger({ name: 'account-client-test', level: 'silent' }),
    metrics: new AgentMetrics(),
    settings: {
      rediscoverySeconds: 300,
      forbiddenRetrySeconds: 60,
      listPageSize: 500,
      streamingLists: 'auto',
      syncProgressMs: 1000,
    },
  });
}

describe('AccountRunner.kubeClient: one Kubernetes client per account, for its watches and its operations', () => {
  it('hands every caller the same client (one discovery cache)', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'account-client-')), 'kubeconfig');
    writeKubeconfig(file);
    const account = runner(file);
    const first = await account.kubeClient();
    const [second, third] = await Promise.all([account.kubeClient(), account.kubeClient()]);
    expect(second).toBe(first);
    expect(third).toBe(first);
    expect(second.discovery).toBe(first.discovery);
    await account.stop();
  });

  it('loads again after a failed load (a kubeconfig Secret mounted late), and refuses once the account stopped', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'account-client-')), 'kubeconfig');
    const account = runner(file);
    await expect(account.kubeClient()).rejects.toThrow();
    writeKubeconfig(file);
    const client = await account.kubeClient();
    expect(client.server.href).toBe('https://127.0.0.1:6443/');
    await account.stop();
    await expect(account.kubeClient()).rejects.toThrow('account a is stopping');
  });
});
