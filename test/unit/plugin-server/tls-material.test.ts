import { X509Certificate } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateCa, issueCertificate, type PemPair } from '../../../src/shared/certs/index.js';
import { tlsFiles, tlsMaterial, type GrpcTlsConfig } from '../../../src/plugin-server/tls/index.js';

const tls: GrpcTlsConfig = {
  certFile: '/secret/tls.crt',
  keyFile: '/secret/tls.key',
  clientCaFile: '/secret/ca.crt',
  crlFile: '/secret/ca.crl',
  requireClientCert: true,
};
const withoutCrl: GrpcTlsConfig = { ...tls, crlFile: undefined };

let ca: PemPair;
let server: PemPair;
let other: PemPair;

beforeAll(async () => {
  ca = await generateCa({ commonName: 'tls-material-ca' });
  const leaf = () => issueCertificate(ca, { commonName: 'plugin-server', usage: 'server', validityDays: 30 });
  [server, other] = [await leaf(), await leaf()];
});

const files = (cert: string, key: string, caPem = ca.cert) => [cert, key, caPem].map((s) => Buffer.from(s));

describe('tlsMaterial', () => {
  it('takes a matching set and says which certificate it serves', () => {
    const m = tlsMaterial(withoutCrl, files(server.cert, server.key));
    const x = new X509Certificate(server.cert);
    expect(m).toMatchObject({ fingerprint256: x.fingerprint256, notAfter: x.validToDate });
    expect(m.options).toMatchObject({ cert: Buffer.from(server.cert), key: Buffer.from(server.key) });
  });

  it('lists the files in the order it reads them, the optional ones only when set', () => {
    expect(tlsFiles(tls)).toEqual(['/secret/tls.crt', '/secret/tls.key', '/secret/ca.crt', '/secret/ca.crl']);
    expect(tlsFiles({ certFile: 'a', keyFile: 'b', requireClientCert: false })).toEqual(['a', 'b']);
  });

  it.each([
    [
      'a key of another certificate',
      () => files(server.cert, other.key),
      /^grpc\.tls\.keyFile: \/secret\/tls\.key is not the private key of the certificate in \/secret\/tls\.crt/,
    ],
    [
      'a half-written certificate',
      () => files(server.cert.slice(0, 200), server.key),
      /^grpc\.tls\.certFile: \/secret\/tls\.crt holds no PEM certificate/,
    ],
    [
      'a certificate that does not parse',
      () => files(server.cert.replace(/\n[A-Za-z0-9+/]{20}/, '\n!!!!'), server.key),
      /^grpc\.tls\.certFile: \/secret\/tls\.crt holds a certificate that does not parse/,
    ],
    [
      'a key that does not parse',
      () => files(server.cert, 'not a key'),
      /^grpc\.tls\.keyFile: \/secret\/tls\.key holds no parsable PEM private key/,
    ],
    [
      'a CA file without certificates',
      () => files(server.cert, server.key, ''),
      /^grpc\.tls\.clientCaFile: \/secret\/ca\.crt holds no PEM certificate/,
    ],
  ])('refuses %s, naming the key and the file', (_what, contents, message) => {
    expect(() => tlsMaterial(withoutCrl, contents())).toThrow(message);
  });

  it('refuses a revocation list that does not parse, naming crlFile', () => {
    const crl = Buffer.from('-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n');
    expect(() => tlsMaterial(tls, [...files(server.cert, server.key), crl])).toThrow(
      /^grpc\.tls\.crlFile: \/secret\/ca\.crl holds a revocation list that does not parse/,
    );
  });
});
