/**
 * The chart's key Secrets without synth (docs/install.md, "Generated secrets"), rendered and installed by the real
 * helm: `pluginServer.dynamicAccountsKey` and `pluginServer.peerSecret` mount a Secret and set the config's paths;
 * without a value the chart generates one in the right format and keeps it on `helm upgrade` (lookup against the
 * shared control plane) and on uninstall; `existingSecret` mounts the user's Secret and creates none; a config that
 * names a key source of its own keeps it.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { createNamespace, helm, kubectl } from '../../infra/index.js';
import { decodeEncryptionKey, isPeerSecret } from '../../../src/shared/secret-formats.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const CHART = join(ROOT, 'charts', 'scale-agent');

interface Obj {
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec?: { template: { spec: { volumes: { name: string; secret?: { secretName: string } }[] } } };
}

function objects(text: string): Obj[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null);
}

const ON = [
  '--set',
  'pluginServer.enabled=true,pluginServer.dynamicAccountsKey.enabled=true,pluginServer.peerSecret.enabled=true',
];

function rendered(objs: Obj[]) {
  const secret = (suffix: string) => objs.find((o) => o.kind === 'Secret' && o.metadata.name.endsWith(suffix));
  const cm = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('plugin-server-config'));
  const config = parse(cm?.data?.['config.yaml'] ?? '') as {
    dynamicAccounts?: Record<string, string>;
    http?: { peerAuth?: { secretFile: string } };
  };
  const pod = objs.find((o) => o.kind === 'Deployment')?.spec?.template.spec;
  return { key: secret('-dynamic-accounts'), peer: secret('-peer'), config, volumes: pod?.volumes ?? [] };
}

describe('chart: the dynamic accounts key and the peer secret', () => {
  it('generates both in their formats, mounts them and names them in the config; neither by default', async () => {
    const off = rendered(objects((await helm(['template', 'r', CHART, '--set', 'pluginServer.enabled=true'])).stdout));
    expect([off.key, off.peer, off.config.dynamicAccounts, off.config.http?.peerAuth]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    const on = rendered(objects((await helm(['template', 'r', CHART, ...ON])).stdout));
    expect(decodeEncryptionKey(on.key?.stringData?.['encryption-key'] ?? '')).toHaveLength(32);
    expect(isPeerSecret(on.peer?.stringData?.secret ?? '')).toBe(true);
    expect(on.key?.metadata.annotations).toEqual({ 'helm.sh/resource-policy': 'keep' });
    expect(on.config.dynamicAccounts).toEqual({
      encryptionKeyFile: '/etc/scale-agent/dynamic-accounts/encryption-key',
    });
    expect(on.config.http?.peerAuth).toEqual({ secretFile: '/etc/scale-agent/peer/secret' });
    expect(on.volumes).toContainEqual({
      name: 'dynamic-accounts-key',
      secret: { secretName: 'r-scale-agent-plugin-server-dynamic-accounts' },
    });
    expect(on.volumes).toContainEqual({
      name: 'peer-secret',
      secret: { secretName: 'r-scale-agent-plugin-server-peer' },
    });
  });

  it("mounts the user's Secrets and creates none; keeps a key source the config names", async () => {
    const r = rendered(
      objects(
        (
          await helm([
            'template',
            'r',
            CHART,
            ...ON,
            '--set',
            'pluginServer.dynamicAccountsKey.existingSecret=mine,pluginServer.dynamicAccountsKey.secretKey=k',
            '--set',
            'pluginServer.peerSecret.existingSecret=peers,pluginServer.config.dynamicAccounts.encryptionKeyEnv=KEY',
          ])
        ).stdout,
      ),
    );
    expect([r.key, r.peer]).toEqual([undefined, undefined]);
    expect(r.volumes).toContainEqual({ name: 'dynamic-accounts-key', secret: { secretName: 'mine' } });
    expect(r.volumes).toContainEqual({ name: 'peer-secret', secret: { secretName: 'peers' } });
    expect(r.config.dynamicAccounts).toEqual({ encryptionKeyEnv: 'KEY' });
    expect(r.config.http?.peerAuth).toEqual({ secretFile: '/etc/scale-agent/peer/secret' });
  });

  it('keeps the generated values on helm upgrade, and the Secrets on uninstall', async () => {
    const ns = await createNamespace('chart-secrets');
    const read = async (name: string, key: string): Promise<string> =>
      Buffer.from(
        (await kubectl(['-n', ns, 'get', 'secret', name, '-o', `jsonpath={.data.${key}}`])).stdout,
        'base64',
      ).toString('utf8');
    const names = { key: 'r-scale-agent-plugin-server-dynamic-accounts', peer: 'r-scale-agent-plugin-server-peer' };
    await helm(['install', 'r', CHART, '--namespace', ns, ...ON]);
    const first = { key: await read(names.key, 'encryption-key'), peer: await read(names.peer, 'secret') };
    expect(decodeEncryptionKey(first.key)).toHaveLength(32);
    await helm(['upgrade', 'r', CHART, '--namespace', ns, ...ON, '--set', 'pluginServer.replicas=2']);
    expect({ key: await read(names.key, 'encryption-key'), peer: await read(names.peer, 'secret') }).toEqual(first);
    await helm(['uninstall', 'r', '--namespace', ns, '--wait']);
    expect(await read(names.key, 'encryption-key')).toBe(first.key);
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
  });
});
