/**
 * gRPC server certificate rotation without a restart (issue 15): a real plugin-server with mTLS reads its
 * certificate from a directory laid out like a Secret volume; the test renews it the way kubelet publishes a
 * cert-manager renewal (..data symlink swap). New handshakes present the new certificate, the agent's stream
 * stays the same session and keeps streaming, a broken pair published later is refused while the renewed
 * certificate keeps serving, and a CRL published later refuses the revoked agent's next handshake.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PemPair } from '../../../src/shared/certs/index.js';
import { AtomicVolume } from '../../infra/atomic-volume.js';
import { createNamespace, kubectl, testEnv } from '../../infra/index.js';
import { AgentProcess, PluginServerProcess } from '../../infra/processes.js';
import {
  clientCredentials,
  createCrl,
  createSecurityPki,
  issueServerCertificate,
  probe,
  SERVER_NAME,
  uriOf,
  waitFor,
  type Pki,
} from '../security/_security.js';

interface AgentView {
  agentId: string;
  sessionId: string;
  connectedAt: string;
  accounts: string[];
}

const RELOADS_OK = 'scale_agent_plugin_server_tls_reloads_total{result="success"}';
const RELOADS_ERROR = 'scale_agent_plugin_server_tls_reloads_total{result="error"}';
const NOT_AFTER = 'scale_agent_plugin_server_tls_certificate_not_after_timestamp_seconds';
const RECONNECTS = 'scale_agent_agent_reconnects_total';
const SESSIONS_OPENED = 'scale_agent_plugin_server_sessions_opened_total';
const ACCOUNT = 'rotation-a';

const dir = mkdtempSync(join(tmpdir(), 'scale-agent-cert-rotation-'));
let pki: Pki;
let volume: AtomicVolume;
let server: PluginServerProcess;
let agent: AgentProcess;
let ns: string;

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

/** Publishes a Secret version as cert-manager's kubernetes.io/tls Secret looks in a volume, plus a CRL. */
function publishSecret(pair: PemPair, crl = readFileSync(pki.crlFile, 'utf8')): void {
  volume.publish({ 'tls.crt': pair.cert, 'tls.key': pair.key, 'ca.crt': readFileSync(pki.caFile), 'ca.crl': crl });
}

/** A fresh TLS handshake with agent A's certificate (no session reuse); the server certificate's fingerprint. */
function handshakeFingerprint(): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: '127.0.0.1',
      port: server.grpcPort,
      servername: SERVER_NAME,
      ca: readFileSync(pki.caFile),
      cert: readFileSync(pki.agents.a.certFile),
      key: readFileSync(pki.agents.a.keyFile),
      ALPNProtocols: ['h2'],
    });
    socket.once('secureConnect', () => {
      resolve(socket.getPeerX509Certificate()?.fingerprint256 ?? '');
      socket.destroy();
    });
    socket.once('error', reject);
  });
}

async function agentView(): Promise<AgentView> {
  return waitFor('the agent in /armory/agents', async () =>
    (await server.get<AgentView[]>('/armory/agents')).body.find((a) => a.agentId === 'rotation-agent'),
  );
}

async function cachedConfigMaps(): Promise<string[]> {
  const r = await server.get<{ name: string }[]>(`/admin/cache/${ACCOUNT}?kind=ConfigMap`);
  return r.status === 200 ? r.body.map((o) => o.name) : [];
}

beforeAll(async () => {
  pki = await createSecurityPki(join(dir, 'pki'));
  volume = new AtomicVolume(join(dir, 'secret'));
  publishSecret({ cert: readFileSync(pki.server.certFile, 'utf8'), key: readFileSync(pki.server.keyFile, 'utf8') });
  ns = await createNamespace('cert-rotation');
  await kubectl(['create', 'configmap', 'before-rotation', '-n', ns]);
  server = await PluginServerProcess.start({
    dir,
    name: 'rotation-server',
    extra: {
      grpc: {
        tls: {
          certFile: volume.path('tls.crt'),
          keyFile: volume.path('tls.key'),
          clientCaFile: volume.path('ca.crt'),
          crlFile: volume.path('ca.crl'),
          requireClientCert: true,
        },
      },
      authorization: { identities: [{ match: { uri: uriOf('a') }, accounts: ['rotation-*'] }] },
    },
  });
  agent = await AgentProcess.start({
    dir,
    agentId: 'rotation-agent',
    serverAddress: server.grpcAddress,
    accounts: [{ name: ACCOUNT, kubeconfigFile: testEnv().kubeconfig, namespaces: [ns], kinds: ['ConfigMap'] }],
    extra: {
      server: {
        address: server.grpcAddress,
        tls: { caFile: pki.caFile, ...pki.agents.a, serverName: SERVER_NAME },
        heartbeatSeconds: 5,
        backoff: { baseDelaySeconds: 0.2, maxDelaySeconds: 1 },
      },
    },
  });
  await waitFor('the first ConfigMap cached', async () => (await cachedConfigMaps()).includes('before-rotation'));
}, 180_000);

afterAll(async () => {
  await agent?.stop();
  await server?.stop();
});

describe('gRPC server certificate rotation', () => {
  let renewed: PemPair;

  it('a renewal published by a ..data swap is presented to new handshakes; the open stream stays', async () => {
    const original = fingerprint(readFileSync(pki.server.certFile, 'utf8'));
    expect(await handshakeFingerprint()).toBe(original);
    const session = await agentView();
    const reconnects = await agent.metric(RECONNECTS);
    const opened = await server.metric(SESSIONS_OPENED);
    expect(opened).toBe(1);

    renewed = await issueServerCertificate(pki.ca, 60);
    publishSecret(renewed);

    await waitFor('a handshake with the renewed certificate', async () => {
      return (await handshakeFingerprint()) === fingerprint(renewed.cert);
    });
    expect(await server.metric(RELOADS_OK)).toBe(1);
    expect(await server.metric(RELOADS_ERROR)).toBe(0);
    expect(await server.metric(NOT_AFTER)).toBe(
      Math.floor(new X509Certificate(renewed.cert).validToDate.getTime() / 1000),
    );
    // gRPC over the new certificate: a new client is welcomed.
    const { creds, options } = clientCredentials(pki, 'a');
    const welcome = await probe(server.grpcAddress, creds, options, ['rotation-probe']);
    expect('welcome' in welcome && welcome.welcome.acceptedAccounts).toEqual(['rotation-probe']);

    // The agent's stream was never dropped and still carries changes made after the rotation.
    await kubectl(['create', 'configmap', 'after-rotation', '-n', ns]);
    await waitFor('a change after the rotation cached', async () =>
      (await cachedConfigMaps()).includes('after-rotation'),
    );
    const now = await agentView();
    expect({ sessionId: now.sessionId, connectedAt: now.connectedAt }).toEqual({
      sessionId: session.sessionId,
      connectedAt: session.connectedAt,
    });
    expect(await agent.metric(RECONNECTS)).toBe(reconnects);
    // The probe opened one more session; the agent none.
    expect(await server.metric(SESSIONS_OPENED)).toBe(opened + 1);
  });

  it('a key that is not the certificate’s is refused, naming the file; the renewed certificate keeps serving', async () => {
    const session = await agentView();
    const other = await issueServerCertificate(pki.ca, 60);
    const mismatched = await issueServerCertificate(pki.ca, 60);
    publishSecret({ cert: other.cert, key: mismatched.key });

    await waitFor('the refused reload counted', async () => (await server.metric(RELOADS_ERROR)) === 1);
    const line = await waitFor('the refusal in the server log', () =>
      readFileSync(server.logFile, 'utf8')
        .split('\n')
        .find((l) => l.includes('were not loaded')),
    );
    expect(line).toContain(`grpc.tls.keyFile: ${volume.path('tls.key')} is not the private key of the certificate`);
    expect(await handshakeFingerprint()).toBe(fingerprint(renewed.cert));
    expect(await server.metric(RELOADS_OK)).toBe(1);

    // A truncated certificate (a half-written file) is refused too, naming the certificate file.
    publishSecret({ cert: renewed.cert.slice(0, renewed.cert.length / 2), key: renewed.key });
    await waitFor('the second refused reload counted', async () => (await server.metric(RELOADS_ERROR)) === 2);
    const lines = await waitFor('the second refusal in the server log', () => {
      const found = readFileSync(server.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.includes('were not loaded'));
      return found.length === 2 ? found : undefined;
    });
    expect(lines[1]).toContain(`grpc.tls.certFile: ${volume.path('tls.crt')}`);
    expect(await handshakeFingerprint()).toBe(fingerprint(renewed.cert));
    expect(await server.metric(NOT_AFTER)).toBe(
      Math.floor(new X509Certificate(renewed.cert).validToDate.getTime() / 1000),
    );

    // Still the same stream, still streaming.
    await kubectl(['create', 'configmap', 'after-refusal', '-n', ns]);
    await waitFor('a change after the refusals cached', async () =>
      (await cachedConfigMaps()).includes('after-refusal'),
    );
    expect((await agentView()).sessionId).toBe(session.sessionId);
  });

  it('a CRL published later refuses the revoked agent at its next handshake; the open stream stays', async () => {
    const session = await agentView();
    const b = clientCredentials(pki, 'b');
    const before = await probe(server.grpcAddress, b.creds, b.options);
    expect('welcome' in before).toBe(true);
    const reloads = await server.metric(RELOADS_OK);
    const reconnects = await agent.metric(RECONNECTS);

    publishSecret(renewed, await createCrl(pki.ca, [readFileSync(pki.agents.b.certFile, 'utf8')]));
    await waitFor('the CRL reloaded', async () => (await server.metric(RELOADS_OK)) === reloads + 1);
    const after = await probe(server.grpcAddress, b.creds, b.options);
    expect(after).toMatchObject({ code: status.UNAVAILABLE });
    // A is not listed: still welcomed, and its agent's stream is the one it had.
    const a = clientCredentials(pki, 'a');
    expect('welcome' in (await probe(server.grpcAddress, a.creds, a.options))).toBe(true);
    expect(await handshakeFingerprint()).toBe(fingerprint(renewed.cert));
    expect((await agentView()).sessionId).toBe(session.sessionId);
    expect(await agent.metric(RECONNECTS)).toBe(reconnects);
  });
});
