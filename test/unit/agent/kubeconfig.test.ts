import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadClusterAccess } from '../../../src/agent/kube/kubeconfig.js';

function kubeconfig(dir: string, users: object[], extra: object = {}): string {
  const file = join(dir, 'config');
  writeFileSync(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'c1',
          cluster: {
            server: 'https://10.0.0.1:6443',
            'certificate-authority': 'pki/ca.crt',
            'tls-server-name': 'kubernetes',
          },
        },
        {
          name: 'c2',
          cluster: {
            server: 'https://c2.example:443',
            'certificate-authority-data': Buffer.from('CA2').toString('base64'),
            'insecure-skip-tls-verify': true,
          },
        },
      ],
      users,
      contexts: users.map((u, i) => ({
        name: `ctx${i}`,
        context: { cluster: i === 0 ? 'c1' : 'c2', user: (u as { name: string }).name },
      })),
      'current-context': 'ctx0',
      ...extra,
    }),
  );
  return file;
}

describe('kubeconfig loading', () => {
  it('reads cluster TLS and a static token, resolving relative files against the kubeconfig', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kc-'));
    mkdirSync(join(dir, 'pki'));
    writeFileSync(join(dir, 'pki/ca.crt'), 'CA1');
    const file = kubeconfig(dir, [{ name: 'u0', user: { token: 'abc' } }]);
    const a = await loadClusterAccess({ kubeconfigFile: file });
    expect(a.server.href).toBe('https://10.0.0.1:6443/');
    expect(a.ca?.toString()).toBe('CA1');
    expect(a.servername).toBe('kubernetes');
    expect(a.rejectUnauthorized).toBe(true);
    expect(await a.authorization()).toBe('Bearer abc');
  });

  it('picks the context, and supports token files, client certificates and basic auth', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kc-'));
    mkdirSync(join(dir, 'pki'));
    writeFileSync(join(dir, 'pki/ca.crt'), 'CA1');
    writeFileSync(join(dir, 'tok'), 'from-file\n');
    writeFileSync(join(dir, 'client.crt'), 'CERT');
    const file = kubeconfig(dir, [
      { name: 'u0', user: { tokenFile: 'tok' } },
      {
        name: 'u1',
        user: { 'client-certificate': 'client.crt', 'client-key-data': Buffer.from('KEY').toString('base64') },
      },
      { name: 'u2', user: { username: 'admin', password: 'pw' } },
    ]);
    expect(await (await loadClusterAccess({ kubeconfigFile: file })).authorization()).toBe('Bearer from-file');
    const certs = await loadClusterAccess({ kubeconfigFile: file, context: 'ctx1' });
    expect([certs.cert?.toString(), certs.key?.toString(), certs.ca?.toString()]).toEqual(['CERT', 'KEY', 'CA2']);
    expect(certs.rejectUnauthorized).toBe(false);
    expect(await certs.authorization()).toBeUndefined();
    const basic = await loadClusterAccess({ kubeconfigFile: file, context: 'ctx2' });
    expect(await basic.authorization()).toBe(`Basic ${Buffer.from('admin:pw').toString('base64')}`);
  });

  it('fails with a clear message for a missing context or file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kc-'));
    const file = kubeconfig(dir, [{ name: 'u0', user: { token: 'x' } }]);
    await expect(loadClusterAccess({ kubeconfigFile: file, context: 'nope' })).rejects.toThrow(
      /context 'nope' not found/,
    );
    await expect(loadClusterAccess({ kubeconfigFile: join(dir, 'missing') })).rejects.toThrow(/cannot read kubeconfig/);
  });

  it('loads kubeconfig contents from memory; files they name must be absolute', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kc-'));
    const users = [
      { name: 'u0', user: { token: 'abc' } },
      { name: 'u1', user: { token: 'def' } },
    ];
    const text = readFileSync(kubeconfig(dir, users), 'utf8');
    // The ca of c1 is the relative pki/ca.crt: from memory there is no directory to resolve it against.
    await expect(loadClusterAccess({ kubeconfigContents: text })).rejects.toThrow(
      /kubeconfig contents names the relative path pki\/ca.crt/,
    );
    const fromMemory = await loadClusterAccess({ kubeconfigContents: text, context: 'ctx1' });
    expect(fromMemory.server.href).toBe('https://c2.example/');
    expect(fromMemory.ca?.toString()).toBe('CA2');
    mkdirSync(join(dir, 'pki'));
    writeFileSync(join(dir, 'pki/ca.crt'), 'CA1');
    const absolute = await loadClusterAccess({
      kubeconfigContents: text.replace('pki/ca.crt', join(dir, 'pki/ca.crt')),
    });
    expect(absolute.ca?.toString()).toBe('CA1');
    expect(await absolute.authorization()).toBe('Bearer abc');
  });

  it('names what is wrong with kubeconfig contents that are not a kubeconfig', async () => {
    await expect(loadClusterAccess({ kubeconfigContents: 'a: [' })).rejects.toMatchObject({
      code: 'SA_ERR_INVALID_INPUT',
      message: expect.stringMatching(/^kubeconfig contents is not valid YAML/),
    });
    await expect(loadClusterAccess({ kubeconfigContents: '- 1\n' })).rejects.toThrow(
      /kubeconfig contents is not a mapping/,
    );
    await expect(loadClusterAccess({ kubeconfigContents: 'kind: Config\n' })).rejects.toThrow(
      /kubeconfig contents: context '' not found/,
    );
  });
});
