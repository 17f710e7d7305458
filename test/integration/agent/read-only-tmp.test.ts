/**
 * An agent that cannot write a temporary file, as in its generated pod (readOnlyRootFilesystem, no /tmp volume),
 * serves dynamic accounts given as kubeconfig contents, and one dynamic account it cannot use is FAILED with the
 * reason while the agent and its static account carry on. Before, the agent wrote the contents under os.tmpdir():
 * the write failed, the rejection went unhandled, the agent exited, was handed the same account on restart and
 * crash-looped, taking its static account down with it.
 *
 * TMPDIR is a regular file, so nothing can be created under it even by root (as EROFS would refuse it in the pod);
 * TSX_DISABLE_CACHE keeps tsx, which runs the agent from source, from writing its cache there. Real plugin-server and
 * agent processes, real control plane.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamespace, createServiceAccount, kubectl, testEnv, waitFor } from '../../infra/index.js';
import { AgentProcess, PluginServerProcess } from '../../infra/processes.js';

const dir = mkdtempSync(join(tmpdir(), 'sa-ro-tmp-'));
let server: PluginServerProcess;
let agent: AgentProcess;
let ns: string;
let kubeconfigContents: string;

interface View {
  state?: string;
  error_message?: string;
}

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(server.httpBase + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const view = async (name: string): Promise<View> => (await api('GET', `/armory/accounts/${name}`)).body as View;

const cachedConfigMaps = async (account: string): Promise<string[]> => {
  const r = await api('GET', `/admin/cache/${account}?kind=ConfigMap`);
  return r.status === 200 ? (r.body as { name: string }[]).map((o) => o.name) : [];
};

beforeAll(async () => {
  ns = await createNamespace('ro-tmp');
  await kubectl(['create', 'configmap', 'before', '-n', ns, '--from-literal=k=v']);
  const sa = await createServiceAccount({
    namespace: ns,
    name: 'ro-reader',
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
  });
  kubeconfigContents = readFileSync(sa.kubeconfigPath, 'utf8');
  const keyFile = join(dir, 'dynamic.key');
  writeFileSync(keyFile, randomBytes(32).toString('base64'), { mode: 0o600 });
  server = await PluginServerProcess.start({ dir, extra: { dynamicAccounts: { encryptionKeyFile: keyFile } } });
  const notADirectory = join(dir, 'tmp-is-a-file');
  writeFileSync(notADirectory, '');
  agent = await AgentProcess.start({
    dir,
    agentId: 'ro-agent',
    serverAddress: server.grpcAddress,
    accounts: [{ name: 'ro-static', kubeconfigFile: testEnv().kubeconfig, namespaces: [ns], kinds: ['ConfigMap'] }],
    env: { TMPDIR: notADirectory, TSX_DISABLE_CACHE: '1' },
  });
}, 120_000);

afterAll(async () => {
  await agent?.stop();
  await server?.stop();
});

describe('an agent with no writable temp directory', () => {
  it('serves a dynamic account from kubeconfig contents, without writing them anywhere', async () => {
    const created = await api('POST', '/armory/accounts/dynamic', {
      name: 'ro-dynamic',
      kubeconfigContents,
      namespaces: [ns],
      kinds: ['ConfigMap'],
    });
    expect(created.status).toBe(201);
    await waitFor('ro-dynamic ACTIVE', async () => (await view('ro-dynamic')).state === 'ACTIVE');
    await waitFor('ro-dynamic cached', async () => (await cachedConfigMaps('ro-dynamic')).includes('before'));
    agent.proc.assertRunning();
  });

  it('an unusable dynamic account is FAILED with the reason; the agent and its static account carry on', async () => {
    // Contents whose CA is a relative file: nothing to resolve it against, so the credentials cannot load.
    const broken = kubeconfigContents.replace(/certificate-authority-data: \S+/, 'certificate-authority: ca.crt');
    expect(broken).not.toBe(kubeconfigContents);
    expect(
      (await api('POST', '/armory/accounts/dynamic', { name: 'ro-broken', kubeconfigContents: broken })).status,
    ).toBe(201);
    const failed = await waitFor('ro-broken FAILED', async () => {
      const v = await view('ro-broken');
      return v.state === 'FAILED' ? v : undefined;
    });
    expect(failed.error_message).toMatch(/kubeconfig contents names the relative path ca\.crt/);

    await kubectl(['create', 'configmap', 'after', '-n', ns, '--from-literal=k=v']);
    await waitFor('the static account still streams', async () =>
      (await cachedConfigMaps('ro-static')).includes('after'),
    );
    await waitFor('the dynamic account still streams', async () =>
      (await cachedConfigMaps('ro-dynamic')).includes('after'),
    );
    expect((await view('ro-dynamic')).state).toBe('ACTIVE');
    agent.proc.assertRunning();
  });
});
