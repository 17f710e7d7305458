/** Shared pieces of the security tests: a PKI with every bad-certificate case, gRPC probes, polling. */
import 'reflect-metadata'; // @peculiar/x509 (tsyringe) needs it before it loads
import { webcrypto } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { credentials, type ChannelCredentials, type ChannelOptions } from '@grpc/grpc-js';
import * as x509 from '@peculiar/x509';
import { generateCa, issueCertificate, type PemPair } from '../../../src/shared/certs/index.js';
import { AgentServiceClient, PROTOCOL_VERSION, type ServerMessage } from '../../../src/shared/proto.js';
import { wireAccount } from '../../infra/records.js';

export const SERVER_NAME = 'plugin-server.security.test';
export const uriOf = (who: string) => `spiffe://scale-agent/security/agent/${who}`;

export interface Pki {
  dir: string;
  /** The CA's certificate and key, to issue more certificates (a renewed server certificate). */
  ca: PemPair;
  caFile: string;
  crlFile: string;
  server: { certFile: string; keyFile: string };
  /** Good agent certificates by name, plus the bad cases. */
  agents: Record<'a' | 'b' | 'expired' | 'revoked' | 'foreign', { certFile: string; keyFile: string }>;
}

function save(dir: string, name: string, pair: PemPair): { certFile: string; keyFile: string } {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  writeFileSync(certFile, pair.cert);
  writeFileSync(keyFile, pair.key, { mode: 0o600 });
  return { certFile, keyFile };
}

/** A plugin-server certificate for SERVER_NAME (a renewal is another call). */
export function issueServerCertificate(ca: PemPair, validityDays = 30): Promise<PemPair> {
  return issueCertificate(ca, { commonName: 'plugin-server', usage: 'server', dnsNames: [SERVER_NAME], validityDays });
}

/** A CA, a server certificate, agent A and B, an expired one, a revoked one (with its CRL), one of another CA. */
export async function createSecurityPki(dir: string): Promise<Pki> {
  mkdirSync(dir, { recursive: true });
  const ca = await generateCa({ commonName: 'security-test-ca' });
  const other = await generateCa({ commonName: 'someone-elses-ca' });
  const client = (who: string, extra: Partial<Parameters<typeof issueCertificate>[1]> = {}) =>
    issueCertificate(ca, {
      commonName: `agent-${who}`,
      usage: 'client',
      uris: [uriOf(who)],
      validityDays: 30,
      ...extra,
    });
  const revoked = await client('revoked');
  const tenDaysAgo = new Date(Date.now() - 10 * 86_400_000);
  const pki: Pki = {
    dir,
    ca,
    caFile: join(dir, 'ca.crt'),
    crlFile: join(dir, 'ca.crl'),
    server: save(dir, 'server', await issueServerCertificate(ca)),
    agents: {
      a: save(dir, 'agent-a', await client('a')),
      b: save(dir, 'agent-b', await client('b')),
      expired: save(dir, 'agent-expired', await client('expired', { now: tenDaysAgo, validityDays: 1 })),
      revoked: save(dir, 'agent-revoked', revoked),
      foreign: save(
        dir,
        'agent-foreign',
        await issueCertificate(other, {
          commonName: 'agent-a',
          usage: 'client',
          uris: [uriOf('a')],
          validityDays: 30,
        }),
      ),
    },
  };
  writeFileSync(pki.caFile, ca.cert);
  writeFileSync(pki.crlFile, await createCrl(ca, [revoked.cert]));
  return pki;
}

/** A PEM CRL signed by `ca` that lists the given certificates as revoked a minute ago. */
export async function createCrl(ca: PemPair, revokedCerts: string[]): Promise<string> {
  const caCert = new x509.X509Certificate(ca.cert);
  const der = Buffer.from(ca.key.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  const signingKey = await webcrypto.subtle.importKey('pkcs8', der, { name: 'ECDSA', namedCurve: 'P-256' }, false, [
    'sign',
  ]);
  const crl = await x509.X509CrlGenerator.create({
    issuer: caCert.subject,
    thisUpdate: new Date(Date.now() - 60_000),
    nextUpdate: new Date(Date.now() + 86_400_000),
    entries: revokedCerts.map((pem) => ({
      serialNumber: new x509.X509Certificate(pem).serialNumber,
      revocationDate: new Date(Date.now() - 60_000),
    })),
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    signingKey: signingKey as unknown as Parameters<typeof x509.X509CrlGenerator.create>[0]['signingKey'],
    extensions: [await x509.AuthorityKeyIdentifierExtension.create(caCert)],
  });
  return crl.toString('pem') + '\n';
}

export function clientCredentials(
  pki: Pki,
  who: keyof Pki['agents'] | 'none',
  serverName = SERVER_NAME,
): { creds: ChannelCredentials; options: ChannelOptions } {
  const pair = who === 'none' ? undefined : pki.agents[who];
  return {
    creds: credentials.createSsl(
      readFileSync(pki.caFile),
      pair ? readFileSync(pair.keyFile) : null,
      pair ? readFileSync(pair.certFile) : null,
    ),
    options: { 'grpc.ssl_target_name_override': serverName, 'grpc.default_authority': serverName },
  };
}

export type ProbeResult = { welcome: NonNullable<ServerMessage['welcome']> } | { code: number; details: string };

/** Dials AgentService, says Hello with `accounts`, and reports the Welcome or the error that ended the call. */
export function probe(
  address: string,
  creds: ChannelCredentials,
  options: ChannelOptions = {},
  accounts: string[] = [],
): Promise<ProbeResult> {
  const client = new AgentServiceClient(address, creds, { ...options, 'grpc.enable_retries': 0 });
  return new Promise<ProbeResult>((resolve) => {
    const call = client.connect();
    call.on('data', (m: ServerMessage) => {
      if (m.welcome) {
        resolve({ welcome: m.welcome });
        call.cancel();
      }
    });
    call.on('error', (e: Error & { code?: number; details?: string }) =>
      resolve({ code: e.code ?? -1, details: e.details ?? e.message }),
    );
    call.write({
      hello: {
        agentId: `probe-${Math.random().toString(36).slice(2, 8)}`,
        version: 'test',
        zone: '',
        identity: {},
        accounts: accounts.map((name) =>
          wireAccount(name, { apiServerHost: `probe-${name}:443`, caFingerprint: '', kubernetesVersion: '' }),
        ),
        protocolVersion: PROTOCOL_VERSION,
        shareLoad: false,
      },
    });
  }).finally(() => client.close());
}

export { waitFor } from '../../infra/wait.js';

/** A namespace with one ConfigMap and a ServiceAccount that may read ConfigMaps there. */
export const CONFIGMAP_READER = [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }];
