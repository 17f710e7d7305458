/**
 * The plugin-server's generated secrets (docs/install.md, "Generated secrets"): the dynamic accounts' encryption key
 * in every install, the peer secret with MySQL; each a Secret of the place, mounted and named in the config, the same
 * value in the Helm values, kept in --certs-dir across runs; or the user's Secret, listed as a prerequisite.
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { GENERATED_SECRET_FILES, parseYamlSource, validateLoaded } from '../../../src/compiler/index.js';
import { decodeEncryptionKey, isPeerSecret } from '../../../src/shared/secret-formats.js';
import { docs, find, MINIMAL, synthText, tempDir, type K8sObject } from './_helpers.js';

const MYSQL = MINIMAL.replace(
  '  namespace: cp\n',
  '  namespace: cp\n  replicas: 2\n  storage: { type: mysql, secretRef: { name: mysql, key: url } }\n',
);

type Pod = {
  volumes: { name: string; secret?: { secretName: string } }[];
  containers: { volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[] }[];
};

function pluginServer(files: Map<string, string>): {
  objects: K8sObject[];
  config: { dynamicAccounts?: { encryptionKeyFile?: string }; http: { peerAuth?: { secretFile: string } } };
  pod: Pod;
  values: Record<string, unknown>;
} {
  const objects = docs(files.get('manifests/plugin-server.yaml') as string);
  const cm = find(objects, 'ConfigMap', 'scale-agent-plugin-server-config') as unknown as {
    data: Record<string, string>;
  };
  const deployment = find(objects, 'Deployment', 'scale-agent-plugin-server') as unknown as {
    spec: { template: { spec: Pod } };
  };
  const values = parse(files.get('helm/plugin-server.values.yaml') as string) as {
    pluginServer: Record<string, unknown>;
  };
  return {
    objects,
    config: parse(cm.data['config.yaml'] as string) as ReturnType<typeof pluginServer>['config'],
    pod: deployment.spec.template.spec,
    values: values.pluginServer,
  };
}

const secretValue = (objects: K8sObject[], name: string, key: string): string =>
  ((find(objects, 'Secret', name) as unknown as { stringData: Record<string, string> }).stringData[key] as string) ??
  '';

describe('generated secrets of the plugin-server', () => {
  it('memory storage: an encryption key, mounted and named in the config, the same in the values; no peer secret', async () => {
    await using tmp = await tempDir();
    const r = await synthText(MINIMAL, tmp.dir);
    const ps = pluginServer(r.files);
    const key = secretValue(ps.objects, 'scale-agent-plugin-server-dynamic-accounts', 'encryption-key');
    expect(decodeEncryptionKey(key)).toHaveLength(32);
    expect(key).toBe((await readFile(join(tmp.dir, GENERATED_SECRET_FILES.dynamicAccountsKey), 'utf8')).trim());
    expect(ps.config.dynamicAccounts).toEqual({
      encryptionKeyFile: '/etc/scale-agent/dynamic-accounts/encryption-key',
    });
    expect(ps.pod.volumes).toContainEqual({
      name: 'dynamic-accounts-key',
      secret: { secretName: 'scale-agent-plugin-server-dynamic-accounts' },
    });
    expect(ps.pod.containers[0]?.volumeMounts).toContainEqual({
      name: 'dynamic-accounts-key',
      mountPath: '/etc/scale-agent/dynamic-accounts',
      readOnly: true,
    });
    expect(ps.values.dynamicAccountsKey).toEqual({ enabled: true, secretKey: 'encryption-key', value: key });
    // One replica on the memory store has no peers: nothing generated, nothing configured.
    expect(ps.config.http.peerAuth).toBeUndefined();
    expect(ps.values.peerSecret).toBeUndefined();
    expect(r.files.get('manifests/plugin-server.yaml')).not.toContain('scale-agent-plugin-server-peer');
    expect(r.files.get('kustomize/overlays/plugin-server/workload/secrets.yaml')).toContain('encryption-key');
    // Generated: nothing for the operator to create.
    expect(r.summary.places.find((p) => p.name === 'plugin-server')?.requires.join()).not.toContain('encryption');
  });

  it('MySQL storage: a peer secret as well, and both kept in --certs-dir across runs (mode 0600)', async () => {
    await using tmp = await tempDir();
    const first = pluginServer((await synthText(MYSQL, tmp.dir)).files);
    const peer = secretValue(first.objects, 'scale-agent-plugin-server-peer', 'secret');
    expect(isPeerSecret(peer)).toBe(true);
    expect(first.config.http.peerAuth).toEqual({ secretFile: '/etc/scale-agent/peer/secret' });
    expect(first.pod.volumes).toContainEqual({
      name: 'peer-secret',
      secret: { secretName: 'scale-agent-plugin-server-peer' },
    });
    expect(first.values.peerSecret).toEqual({ enabled: true, secretKey: 'secret', value: peer });
    for (const f of Object.values(GENERATED_SECRET_FILES)) {
      expect({ f, mode: (await stat(join(tmp.dir, f))).mode & 0o777 }).toEqual({ f, mode: 0o600 });
    }
    const again = pluginServer((await synthText(MYSQL, tmp.dir)).files);
    expect(secretValue(again.objects, 'scale-agent-plugin-server-peer', 'secret')).toBe(peer);
    expect(secretValue(again.objects, 'scale-agent-plugin-server-dynamic-accounts', 'encryption-key')).toBe(
      secretValue(first.objects, 'scale-agent-plugin-server-dynamic-accounts', 'encryption-key'),
    );
  });

  it('Secrets the topology names: mounted, listed as prerequisites, and nothing generated', async () => {
    await using tmp = await tempDir();
    const named = MYSQL.replace(
      '  namespace: cp\n',
      '  namespace: cp\n  dynamicAccounts: { encryptionKeySecret: { name: da-key, key: k } }\n' +
        '  peerSecret: { name: peers, key: p }\n',
    );
    const r = await synthText(named, tmp.dir);
    const ps = pluginServer(r.files);
    expect(ps.objects.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name)).not.toContain(
      'scale-agent-plugin-server-dynamic-accounts',
    );
    expect(r.files.get('manifests/plugin-server.yaml')).not.toContain('scale-agent-plugin-server-peer');
    expect(ps.config.dynamicAccounts).toEqual({ encryptionKeyFile: '/etc/scale-agent/dynamic-accounts/k' });
    expect(ps.config.http.peerAuth).toEqual({ secretFile: '/etc/scale-agent/peer/p' });
    expect(ps.pod.volumes).toContainEqual({ name: 'dynamic-accounts-key', secret: { secretName: 'da-key' } });
    expect(ps.pod.volumes).toContainEqual({ name: 'peer-secret', secret: { secretName: 'peers' } });
    expect(ps.values.dynamicAccountsKey).toEqual({ enabled: true, secretKey: 'k', existingSecret: 'da-key' });
    expect(ps.values.peerSecret).toEqual({ enabled: true, secretKey: 'p', existingSecret: 'peers' });
    const requires = r.summary.places.find((p) => p.name === 'plugin-server')?.requires ?? [];
    expect(requires.filter((x) => /^Secret (da-key|peers) /.test(x))).toEqual([
      "Secret da-key (key k: dynamic accounts' encryption key, 32 bytes as base64 or 64 hex characters) in namespace cp",
      "Secret peers (key p: replicas' peer secret, one word of at least 32 characters) in namespace cp",
    ]);
    await expect(stat(join(tmp.dir, GENERATED_SECRET_FILES.dynamicAccountsKey))).rejects.toThrow(/ENOENT/);
    await expect(stat(join(tmp.dir, GENERATED_SECRET_FILES.peerSecret))).rejects.toThrow(/ENOENT/);
  });

  it('refuses a kept key that is not one, naming the file, instead of replacing it', async () => {
    await using tmp = await tempDir();
    const file = join(tmp.dir, GENERATED_SECRET_FILES.dynamicAccountsKey);
    await writeFile(file, 'not-a-key\n');
    await expect(synthText(MINIMAL, tmp.dir)).rejects.toThrow(
      `${file}: expected 32 bytes as base64 or 64 hex characters`,
    );
    expect(await readFile(file, 'utf8')).toBe('not-a-key\n');
  });

  it('refuses a peer secret on the memory store, which has no peers', () => {
    const text = MINIMAL.replace('  namespace: cp\n', '  namespace: cp\n  peerSecret: { name: peers, key: p }\n');
    const v = validateLoaded(parseYamlSource(text, 'peer.yaml'));
    expect(v.ok).toBe(false);
    expect(v.errors.map((e) => ({ path: e.path, message: e.message }))).toEqual([
      {
        path: '/pluginServer/peerSecret',
        message: 'peerSecret needs storage.type mysql or postgres (one replica on the memory store has no peers)',
      },
    ]);
  });
});
