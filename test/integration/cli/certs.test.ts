import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer, type TLSSocket } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run } from '../../infra/index.js';

const bin = fileURLToPath(new URL('../../../bin/run.js', import.meta.url));
const cli = (args: string[]) => run(process.execPath, [bin, ...args]);

/** A real mutual-TLS handshake on loopback with the given files; resolves with the server-side peer URI. */
function handshake(
  server: { ca: string; cert: string; key: string },
  client: { ca: string; cert: string; key: string; servername: string },
) {
  return new Promise<string>((resolve, reject) => {
    const srv = createServer({ ...server, requestCert: true, rejectUnauthorized: true }, (s: TLSSocket) => {
      const san = s.getPeerCertificate().subjectaltname ?? '';
      s.end();
      srv.close();
      resolve(san);
    });
    srv.on('tlsClientError', (e) => {
      srv.close();
      reject(e);
    });
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      const c = connect({ host: '127.0.0.1', port, ...client });
      c.on('error', (e) => {
        srv.close();
        reject(e);
      });
      c.on('data', () => {});
    });
  });
}

describe('scale-agent certs', () => {
  it('issues a CA, server and agent certificates that complete a real mTLS handshake, and is stable on re-run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'certs-'));
    const first = await cli(['certs', '--out', dir, '--agent', 'core', '--server-name', 'grpc.example.com', '--json']);
    const out = JSON.parse(first.stdout) as { written: string[] };
    expect(out.written.map((f) => f.slice(dir.length + 1)).sort()).toEqual([
      'ca.crt',
      'ca.key',
      'client-core.crt',
      'client-core.key',
      'server.crt',
      'server.key',
    ]);
    const file = (f: string) => readFileSync(join(dir, f), 'utf8');
    expect(statSync(join(dir, 'server.key')).mode & 0o777).toBe(0o600);

    const ca = new X509Certificate(file('ca.crt'));
    const server = new X509Certificate(file('server.crt'));
    const agent = new X509Certificate(file('client-core.crt'));
    expect(ca.ca).toBe(true);
    expect(server.verify(ca.publicKey)).toBe(true);
    expect(agent.verify(ca.publicKey)).toBe(true);
    expect(server.checkHost('grpc.example.com')).toBe('grpc.example.com');
    expect(server.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(server.checkHost('evil.example.com')).toBeUndefined();
    expect(agent.subjectAltName).toContain('URI:spiffe://scale-agent/local/agent/core');

    const peer = await handshake(
      { ca: file('ca.crt'), cert: file('server.crt'), key: file('server.key') },
      {
        ca: file('ca.crt'),
        cert: file('client-core.crt'),
        key: file('client-core.key'),
        servername: 'grpc.example.com',
      },
    );
    expect(peer).toContain('spiffe://scale-agent/local/agent/core');

    // A client certificate from another CA is refused by the server.
    const other = mkdtempSync(join(tmpdir(), 'certs-other-'));
    await cli(['certs', '--out', other, '--agent', 'core']);
    await expect(
      handshake(
        { ca: file('ca.crt'), cert: file('server.crt'), key: file('server.key') },
        {
          ca: file('ca.crt'),
          cert: readFileSync(join(other, 'client-core.crt'), 'utf8'),
          key: readFileSync(join(other, 'client-core.key'), 'utf8'),
          servername: 'grpc.example.com',
        },
      ),
    ).rejects.toThrow();

    // Re-running with the same flags rotates nothing.
    const second = JSON.parse(
      (await cli(['certs', '--out', dir, '--agent', 'core', '--server-name', 'grpc.example.com', '--json'])).stdout,
    ) as { written: string[] };
    expect(second.written).toEqual([]);
    expect(file('server.crt')).toBe(server.toString());
  });

  it('refuses an agent name that is not a DNS label, writing nothing', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'certs-bad-')), 'out');
    const res = await run(process.execPath, [bin, 'certs', '--out', dir, '--agent', 'Bad_Name'], { allowFail: true });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('--agent Bad_Name');
    expect(() => statSync(dir)).toThrow();
  });
});
