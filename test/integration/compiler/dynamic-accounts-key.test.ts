/**
 * The dynamic accounts' key synth generates, as a real plugin-server process uses it: the `dynamicAccounts` section
 * of the generated config, with its key file moved from the in-pod mount to a temp file holding the generated Secret's
 * value. With it, a dynamic account with kubeconfigContents is accepted and stored sealed (a plugin-server without a
 * key answers such a POST with 400 "needs dynamicAccounts.encryptionKeyFile", which is what generated installs did).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { ensureTopologySecrets, loadTopologySource, synthesize } from '../../../src/compiler/index.js';
import { PluginServerProcess } from '../../infra/processes.js';
import { topology } from '../../unit/compiler/_helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'scale-agent-dynamic-key-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TOPOLOGY = topology(
  'dynamic',
  `
pluginServer:
  namespace: spinnaker
  tls: { mode: insecure }
  rest: { auth: { enabled: false } }
agents:
  - name: core
    mode: service
    accounts: [{ name: core, kubeconfigSecret: { name: kc, key: core } }]
`,
);

type Obj = {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
};

/** The generated config's dynamicAccounts section, its key file pointed at a temp copy of the generated Secret. */
async function generatedDynamicAccounts(): Promise<{ encryptionKeyFile?: string } | undefined> {
  const { topology } = loadTopologySource(TOPOLOGY, 'dynamic.yaml');
  const { secrets } = await ensureTopologySecrets(topology, join(dir, 'certs'));
  const r = synthesize(topology, { version: '0.1.0', secrets });
  const objects = parseAllDocuments(r.files.get('manifests/plugin-server.yaml') as string).map((d) => d.toJS() as Obj);
  const cm = objects.find((o) => o.kind === 'ConfigMap');
  const config = parse(cm?.data?.['config.yaml'] as string) as { dynamicAccounts?: { encryptionKeyFile?: string } };
  const section = config.dynamicAccounts;
  if (!section?.encryptionKeyFile) return section;
  const key = objects.find(
    (o) => o.kind === 'Secret' && o.metadata.name === 'scale-agent-plugin-server-dynamic-accounts',
  )?.stringData?.[section.encryptionKeyFile.split('/').at(-1) as string];
  expect(key, 'the Secret holding the key the config names').toBeDefined();
  const file = join(dir, 'encryption-key');
  writeFileSync(file, key as string, { mode: 0o600 });
  return { ...section, encryptionKeyFile: file };
}

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: 'https://10.0.0.1:6443' } }]
users: [{ name: u, user: { token: not-a-real-token } }]
contexts: [{ name: c, context: { cluster: c, user: u } }]
current-context: c
`;

describe('the dynamic accounts key synth generates', () => {
  it('lets the plugin-server take a dynamic account with kubeconfigContents, stored sealed', async () => {
    const dynamicAccounts = await generatedDynamicAccounts();
    expect(dynamicAccounts?.encryptionKeyFile).toBeDefined();
    const ps = await PluginServerProcess.start({ dir, name: 'dynamic', extra: { dynamicAccounts } });
    try {
      const res = await fetch(`${ps.httpBase}/armory/accounts/dynamic`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'dyn', kubeconfigContents: KUBECONFIG, state: 'INACTIVE' }),
      });
      const body = await res.text();
      expect(res.status, body).toBe(201);
      expect(body).not.toContain('not-a-real-token');
      expect(JSON.parse(body)).toMatchObject({ name: 'dyn', source: 'kubeconfigContents' });
    } finally {
      await ps.stop();
    }
  }, 120_000);
});
