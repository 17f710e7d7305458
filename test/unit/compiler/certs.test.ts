import { readFile } from 'node:fs/promises';
import { once } from 'node:events';
import { connect, createServer, type TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTopologySource, serverDnsNames } from '../../../src/compiler/index.js';
import { ensureTopologyCerts } from '../../../src/compiler/certs.js';
import { describeCertificate, isSignedBy, keyMatchesCertificate } from '../../../src/shared/certs/index.js';
import { MINIMAL, synthText, tempDir, topology } from './_helpers.js';

const REMOTE = topology(
  'acme',
  `
pluginServer:
  namespace: spinnaker
  grpc: { exposure: { type: External, address: "grpc.acme.example:443" } }
agents:
  - name: eu
    mode: infrastructure
    accounts: [{ name: eu-prod, kubeconfigSecret: { name: kc, key: eu } }]
  - name: us
    mode: infrastructure
    accounts: [{ name: us-prod, kubeconfigSecret: { name: kc, key: us } }]
`,
);

describe('generated TLS material', () => {
  it('issues a CA, a server certificate with the Service and external names, and one client cert per group', async () => {
    await using tmp = await tempDir();
    const { topology } = loadTopologySource(REMOTE, 'r.yaml');
    const r = await ensureTopologyCerts(topology, tmp.dir);
    if (!r) throw new Error('expected certificates');
    const { caCert, server, clients } = r.material;
    const ca = describeCertificate(caCert);
    expect(ca.isCa).toBe(true);
    const s = describeCertificate(server.cert);
    expect(s.dnsNames.sort()).toEqual(
      [
        'grpc.acme.example',
        'scale-agent-plugin-server-grpc',
        'scale-agent-plugin-server-grpc.spinnaker',
        'scale-agent-plugin-server-grpc.spinnaker.svc',
        'scale-agent-plugin-server-grpc.spinnaker.svc.cluster.local',
      ].sort(),
    );
    expect(serverDnsNames(topology)).toContain('grpc.acme.example');
    expect(s.extendedKeyUsages).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(s.isCa).toBe(false);
    expect(await isSignedBy(server.cert, caCert)).toBe(true);
    expect(await keyMatchesCertificate(server.cert, server.key)).toBe(true);
    expect(Object.keys(clients).sort()).toEqual(['eu', 'us']);
    for (const [group, pair] of Object.entries(clients)) {
      const c = describeCertificate(pair.cert);
      expect(c.uris).toEqual([`spiffe://scale-agent/acme/agent/${group}`]);
      expect(c.extendedKeyUsages).toEqual(['1.3.6.1.5.5.7.3.2']);
      expect(await isSignedBy(pair.cert, caCert)).toBe(true);
      expect(await keyMatchesCertificate(pair.cert, pair.key)).toBe(true);
      expect(await keyMatchesCertificate(pair.cert, server.key)).toBe(false);
    }
    const keyStat = await import('node:fs/promises').then((fs) => fs.stat(join(tmp.dir, 'ca.key')));
    expect(keyStat.mode & 0o077).toBe(0);
  });

  it('reuses an existing set, reissuing only what no longer fits', async () => {
    await using tmp = await tempDir();
    const { topology } = loadTopologySource(REMOTE, 'r.yaml');
    const first = await ensureTopologyCerts(topology, tmp.dir);
    expect(first?.set.written.length).toBe(8);
    const again = await ensureTopologyCerts(topology, tmp.dir);
    expect(again?.set.written).toEqual([]);
    expect(again?.material).toEqual(first?.material);

    // A new external address changes only the server certificate; a new group adds only its client cert.
    const changed = REMOTE.replace('grpc.acme.example:443', 'grpc2.acme.example:443').concat(
      '  - name: ap\n    mode: infrastructure\n    accounts: [{ name: ap-prod, kubeconfigSecret: { name: kc, key: ap } }]\n',
    );
    const next = await ensureTopologyCerts(loadTopologySource(changed, 'r.yaml').topology, tmp.dir);
    expect(next?.set.written.map((p) => p.slice(tmp.dir.length + 1)).sort()).toEqual(
      ['client-ap.crt', 'client-ap.key', 'server.crt', 'server.key'].sort(),
    );
    expect(next?.material.caCert).toBe(first?.material.caCert);
    expect(next?.material.clients.eu).toEqual(first?.material.clients.eu);
    expect(describeCertificate(next?.material.server.cert as string).dnsNames).toContain('grpc2.acme.example');
  });

  it('puts the same PEMs into the Secrets the overlays carry', async () => {
    await using tmp = await tempDir();
    const r = await synthText(MINIMAL, tmp.dir);
    const caCert = await readFile(join(tmp.dir, 'ca.crt'), 'utf8');
    const clientCert = await readFile(join(tmp.dir, 'client-core.crt'), 'utf8');
    const secret = r.files.get('kustomize/overlays/agent-core/workload/tls-secret.yaml') as string;
    expect(secret).toContain(caCert.split('\n')[1]);
    expect(secret).toContain(clientCert.split('\n')[1]);
  });

  it('needs no material for insecure or cert-manager topologies', async () => {
    await using tmp = await tempDir();
    for (const tls of ['{ mode: insecure }', '{ certificates: { source: cert-manager, issuerRef: { name: ca } } }']) {
      const { topology } = loadTopologySource(
        MINIMAL.replace('  namespace: cp\n', `  namespace: cp\n  tls: ${tls}\n`),
        'x.yaml',
      );
      expect(await ensureTopologyCerts(topology, tmp.dir)).toBeUndefined();
    }
  });

  it('completes a real mutual-TLS handshake: server name verified, client certificate accepted', async () => {
    await using tmp = await tempDir();
    const { topology } = loadTopologySource(REMOTE, 'r.yaml');
    const m = (await ensureTopologyCerts(topology, tmp.dir))?.material;
    if (!m) throw new Error('expected certificates');
    const peers: string[] = [];
    const server = createServer(
      { cert: m.server.cert, key: m.server.key, ca: m.caCert, requestCert: true, rejectUnauthorized: true },
      (sock: TLSSocket) => {
        const uri = sock.getPeerCertificate().subjectaltname ?? '';
        peers.push(uri);
        sock.end('ok');
      },
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    try {
      const client = connect({
        host: '127.0.0.1',
        port,
        servername: 'grpc.acme.example',
        ca: m.caCert,
        cert: m.clients.eu?.cert,
        key: m.clients.eu?.key,
      });
      await once(client, 'secureConnect');
      expect(client.authorized).toBe(true);
      const [data] = (await once(client, 'data')) as [Buffer];
      expect(data.toString()).toBe('ok');
      client.destroy();
      expect(peers).toEqual(['URI:spiffe://scale-agent/acme/agent/eu']);

      // A name the certificate does not carry is refused.
      const wrong = connect({ host: '127.0.0.1', port, servername: 'evil.example', ca: m.caCert });
      const [err] = (await once(wrong, 'error')) as [Error & { code?: string }];
      expect(err.code).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    } finally {
      server.close();
    }
  });
});
