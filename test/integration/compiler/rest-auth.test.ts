/**
 * The REST authentication synth turns on by default, enforced by a real plugin-server process running the `http`
 * section synth generated (only the tokens file moved from its in-pod mount to a temp file): without trusted
 * networks every call needs a token; with the topology's trustedNetworks, Spinnaker's token-less reads pass while
 * /armory stays closed.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { loadTopologySource, synthesize } from '../../../src/compiler/index.js';
import { PluginServerProcess } from '../../infra/processes.js';

const dir = mkdtempSync(join(tmpdir(), 'scale-agent-rest-auth-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TOPOLOGY = (rest: string) => `
apiVersion: scale-agent.io/v1alpha1
kind: Topology
metadata: { name: auth }
pluginServer:
  namespace: spinnaker
  tls: { mode: insecure }
${rest}
agents:
  - name: core
    mode: service
    accounts: [{ name: core, kubeconfigSecret: { name: kc, key: core } }]
`;

type HttpAuth = { tokensFile: string; trustedNetworks: string[] };

/** The plugin-server's generated `http` section, with the tokens file pointed at a temp copy. */
function generatedHttp(rest: string, tokensFile: string): { auth: HttpAuth } {
  const { topology } = loadTopologySource(TOPOLOGY(rest), 'auth.yaml');
  // Only the http section is used here; the dynamic accounts' key synth would generate is not.
  const r = synthesize(topology, { version: '0.1.0', secrets: { dynamicAccountsKey: 'unused' } });
  const cm = parseAllDocuments(r.files.get('manifests/plugin-server.yaml') as string)
    .map((d) => d.toJS() as { kind: string; data?: Record<string, string> })
    .find((o) => o.kind === 'ConfigMap');
  const http = (parse(cm?.data?.['config.yaml'] as string) as { http: { auth: HttpAuth } }).http;
  expect(http.auth.tokensFile).toBe('/etc/scale-agent/rest-tokens/tokens');
  return { auth: { ...http.auth, tokensFile } };
}

const ADMIN = 'admin-token-0123456789abcdef';
const READ = 'read-token-0123456789abcdef';

async function status(ps: PluginServerProcess, path: string, token?: string): Promise<number> {
  const res = await fetch(ps.httpBase + path, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  await res.arrayBuffer();
  return res.status;
}

describe('REST authentication as synth emits it', () => {
  const tokensFile = join(dir, 'tokens');
  writeFileSync(tokensFile, `${ADMIN} ops admin\n${READ} dashboards read\n`, { mode: 0o600 });

  it('default: no trusted networks, so every API call needs a token; health stays open', async () => {
    const ps = await PluginServerProcess.start({
      dir,
      name: 'default',
      extra: { http: generatedHttp('', tokensFile) },
    });
    try {
      expect(await status(ps, '/credentials')).toBe(401);
      expect(await status(ps, '/credentials', READ)).toBe(200);
      expect(await status(ps, '/armory/agents')).toBe(401);
      expect(await status(ps, '/armory/agents', ADMIN)).toBe(200);
      expect(await status(ps, '/readyz')).toBe(200);
    } finally {
      await ps.stop();
    }
  }, 120_000);

  it('trustedNetworks from the topology: token-less Clouddriver reads pass, /armory still needs a token', async () => {
    const rest = '  rest: { auth: { trustedNetworks: [127.0.0.1/32, "::1/128"] } }';
    const ps = await PluginServerProcess.start({
      dir,
      name: 'trusted',
      extra: { http: generatedHttp(rest, tokensFile) },
    });
    try {
      expect(await status(ps, '/credentials')).toBe(200);
      expect(await status(ps, '/armory/agents')).toBe(401);
    } finally {
      await ps.stop();
    }
  }, 120_000);
});
