import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeApiError, KubeClient, OutcomeUnknownError } from '../../../src/agent/kube/client.js';
import { generateCa, issueCertificate } from '../../../src/shared/certs/x509.js';

/**
 * A 2xx answer whose body is not JSON: the bytes were damaged on their way (a fault run saw a list answer that began
 * mid-object, `5","uid":…`). It must count as a lost answer — a read sent again, a write that may apply twice
 * reported as of unknown outcome — and its error must show the bytes, not only the parser's position.
 */
describe('an API server answer that is not JSON', () => {
  const damaged = '5","uid":"u-1"},{"metadata":{"name":"op-2"}}]}';
  let server: http2.Http2SecureServer;
  let client: KubeClient;
  const seen: string[] = [];
  let damageNext = 0;
  let conflictCutShort = false;

  beforeAll(async () => {
    const ca = await generateCa({ commonName: 'kube-answer-test-ca' });
    const cert = await issueCertificate(ca, {
      commonName: 'kube-apiserver',
      usage: 'server',
      ipAddresses: ['127.0.0.1'],
      validityDays: 1,
    });
    server = http2.createSecureServer({ cert: cert.cert, key: cert.key });
    server.on('stream', (stream, headers) => {
      seen.push(`${String(headers[':method'])} ${String(headers[':path'])}`);
      if (conflictCutShort) {
        // A 409 whose body stops after its first bytes: the connection goes away under it.
        stream.on('error', () => {});
        stream.respond({ ':status': 409, 'content-type': 'application/json' });
        stream.write('{"kind":"Status","reason":"Alrea');
        setTimeout(() => stream.session?.destroy(), 20);
        return;
      }
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      if (damageNext > 0) {
        damageNext -= 1;
        stream.end(damaged);
      } else stream.end('{"kind":"ConfigMapList","items":[]}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const kubeconfig = {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'c',
          cluster: {
            server: `https://127.0.0.1:${port}`,
            'certificate-authority-data': Buffer.from(ca.cert).toString('base64'),
          },
        },
      ],
      users: [{ name: 'u', user: { token: 'test-token' } }],
      contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'ctx',
    };
    client = await KubeClient.create({ kubeconfigContents: JSON.stringify(kubeconfig) });
    client.timing = { ...client.timing, sleep: () => Promise.resolve() };
  });
  afterAll(async () => {
    client?.close();
    await new Promise((r) => server?.close(r));
  });

  it('is read again, and the second answer is taken', async () => {
    seen.length = 0;
    damageNext = 1;
    const list = await client.retrying(3).getJson<{ kind: string }>('/api/v1/namespaces/ns/configmaps');
    expect(list.kind).toBe('ConfigMapList');
    expect(seen).toEqual(['GET /api/v1/namespaces/ns/configmaps', 'GET /api/v1/namespaces/ns/configmaps']);
  });

  it('fails a read out of attempts with an error that shows the first bytes', async () => {
    seen.length = 0;
    damageNext = 1;
    await expect(client.getJson('/api/v1/namespaces/ns/configmaps')).rejects.toThrow(
      /GET \/api\/v1\/namespaces\/ns\/configmaps: the API server's answer is not JSON \(46 bytes, starting "5\\",\\"uid\\"/,
    );
    expect(seen).toHaveLength(1);
  });

  it('reports a create whose answer is damaged as of unknown outcome, without sending it again', async () => {
    seen.length = 0;
    damageNext = 1;
    const create = client.retrying(3).request('POST', '/api/v1/namespaces/ns/configmaps', {
      body: { metadata: { name: 'x' } },
    });
    await expect(create).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect(seen).toEqual(['POST /api/v1/namespaces/ns/configmaps']);
  });

  it('keeps the status of an error answer whose body is cut short: a 409 is a conflict, not an unknown outcome', async () => {
    seen.length = 0;
    conflictCutShort = true;
    try {
      const create = client.retrying(3).request('POST', '/api/v1/namespaces/ns/configmaps', {
        body: { metadata: { name: 'x' } },
      });
      const error = await create.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(KubeApiError);
      expect((error as KubeApiError).status).toBe(409);
      expect(seen).toEqual(['POST /api/v1/namespaces/ns/configmaps']);
    } finally {
      conflictCutShort = false;
    }
  });
});
