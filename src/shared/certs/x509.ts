import 'reflect-metadata'; // tsyringe, which @peculiar/x509 uses, needs the Reflect metadata API
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALG = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGN = { name: 'ECDSA', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;
/** Certificates start a little in the past so a peer whose clock runs behind still accepts them. */
const BACKDATE_MS = 5 * 60_000;

/** A certificate and its PKCS#8 private key, both PEM. */
export interface PemPair {
  cert: string;
  key: string;
}

export interface CaOptions {
  commonName: string;
  validityDays?: number;
  now?: Date;
}

export interface LeafOptions {
  commonName: string;
  usage: 'server' | 'client';
  dnsNames?: string[];
  ipAddresses?: string[];
  uris?: string[];
  validityDays: number;
  now?: Date;
}

/** A self-signed ECDSA P-256 CA, allowed to sign leaf certificates only (path length 0). */
export async function generateCa(options: CaOptions): Promise<PemPair> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const now = options.now ?? new Date();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: [{ CN: [options.commonName] }, { O: ['scale-agent'] }],
    notBefore: new Date(now.getTime() - BACKDATE_MS),
    notAfter: new Date(now.getTime() + (options.validityDays ?? 3650) * DAY_MS),
    signingAlgorithm: SIGN,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: cert.toString('pem') + '\n', key: await exportKey(keys.privateKey) };
}

/** A leaf certificate signed by `ca`, for TLS server or client authentication. */
export async function issueCertificate(ca: PemPair, options: LeafOptions): Promise<PemPair> {
  const caCert = new x509.X509Certificate(ca.cert);
  const caKey = await importKey(ca.key);
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const now = options.now ?? new Date();
  const san: x509.JsonGeneralName[] = [
    ...(options.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(options.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
    ...(options.uris ?? []).map((value) => ({ type: 'url' as const, value })),
  ];
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension(
      [options.usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth],
      false,
    ),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    await x509.AuthorityKeyIdentifierExtension.create(caCert),
  ];
  if (san.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(san, false));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: [{ CN: [options.commonName] }, { O: ['scale-agent'] }],
    issuer: caCert.subject,
    notBefore: new Date(now.getTime() - BACKDATE_MS),
    notAfter: new Date(now.getTime() + options.validityDays * DAY_MS),
    signingAlgorithm: SIGN,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions,
  });
  return { cert: cert.toString('pem') + '\n', key: await exportKey(keys.privateKey) };
}

export interface CertificateFacts {
  subject: string;
  issuer: string;
  notBefore: Date;
  notAfter: Date;
  isCa: boolean;
  dnsNames: string[];
  ipAddresses: string[];
  uris: string[];
  extendedKeyUsages: string[];
}

export function describeCertificate(pem: string): CertificateFacts {
  const c = new x509.X509Certificate(pem);
  const san = c.getExtension(x509.SubjectAlternativeNameExtension);
  const names = san?.names.toJSON() ?? [];
  const eku = c.getExtension(x509.ExtendedKeyUsageExtension);
  const bc = c.getExtension(x509.BasicConstraintsExtension);
  return {
    subject: c.subject,
    issuer: c.issuer,
    notBefore: c.notBefore,
    notAfter: c.notAfter,
    isCa: bc?.ca ?? false,
    dnsNames: names.filter((n) => n.type === 'dns').map((n) => n.value),
    ipAddresses: names.filter((n) => n.type === 'ip').map((n) => n.value),
    uris: names.filter((n) => n.type === 'url').map((n) => n.value),
    extendedKeyUsages: (eku?.usages ?? []).map(String),
  };
}

/** True when `cert` carries a valid signature by `ca`'s key and names `ca` as its issuer. */
export async function isSignedBy(cert: string, ca: string): Promise<boolean> {
  const c = new x509.X509Certificate(cert);
  const issuer = new x509.X509Certificate(ca);
  if (c.issuer !== issuer.subject) return false;
  return c.verify({ publicKey: issuer.publicKey, signatureOnly: true });
}

/** True when the private key belongs to the certificate (sign + verify round trip). */
export async function keyMatchesCertificate(cert: string, key: string): Promise<boolean> {
  const c = new x509.X509Certificate(cert);
  const priv = await importKey(key);
  const data = new TextEncoder().encode('scale-agent key check');
  const sig = await webcrypto.subtle.sign(SIGN, priv, data);
  const pub = await c.publicKey.export(
    ALG,
    ['verify'],
    webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0],
  );
  return webcrypto.subtle.verify(SIGN, pub, sig, data);
}

async function exportKey(key: webcrypto.CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY') + '\n';
}

async function importKey(pem: string): Promise<webcrypto.CryptoKey> {
  const der = x509.PemConverter.decode(pem)[0];
  if (!der) throw new Error('no PEM block in private key');
  return webcrypto.subtle.importKey('pkcs8', der, ALG, false, ['sign']);
}

function serial(): string {
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0] ?? 0) & 0x7f; // positive INTEGER
  return Buffer.from(bytes).toString('hex');
}
