/**
 * From a Clouddriver body on the REST API to the message on the agent's stream, with a stand-in agent (TestAgent:
 * the real protocol, no Kubernetes) answering for the account. The description is parsed once, on the plugin-server;
 * the stream carries the normalized operation and an epoch deadline; bad bodies stop at a 400 naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseOperations } from '../../../src/plugin-server/api/descriptions/index.js';
import type { PluginServer } from '../../../src/plugin-server/server.js';
import { decodeOperation, resultMessage } from '../../../src/shared/ops/index.js';
import { account, startServer, TestAgent } from './helpers.js';

const TIMEOUT_SECONDS = 120;

describe('operation bodies on the REST API and the wire', () => {
  let server: PluginServer;
  let base: string;
  let agent: TestAgent;

  beforeAll(async () => {
    let address: string;
    ({ server, base, address } = await startServer(
      `operations: {timeoutSeconds: ${TIMEOUT_SECONDS}, agentWaitSeconds: 1, cacheWaitSeconds: 1}`,
    ));
    agent = new TestAgent(address);
    await agent.hello([{ ...account('dev'), namespaces: ['shop'] }]);
  });
  afterAll(async () => {
    agent?.close();
    await server?.stop();
  });

  const post = async (path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('sends the agent the operation the parser made of the description, with an epoch deadline', async () => {
    const description = {
      account: 'dev',
      cloudProvider: 'kubernetes',
      location: 'shop',
      manifestName: 'deployment web',
      replicas: '3',
      // Orca's stage context travels along and is dropped by the parser.
      stageContext: { refId: '1' },
    };
    const before = Date.now();
    const submitted = await post('/kubernetes/ops', [{ scaleManifest: description }]);
    expect(submitted.status).toBe(200);
    const sent = (await agent.next((m) => m.operation !== undefined)).operation!;
    const decoded = decodeOperation(sent, Date.now());
    if (!decoded.ok) throw new Error(decoded.error);
    const parsed = parseOperations([{ scaleManifest: description }], { endpoint: 'kubernetes' });
    if (!parsed.ok) throw new Error('the description does not parse');
    expect(decoded.op).toEqual(parsed.operations[0]);
    expect(decoded.op.payload).toEqual({ target: { location: 'shop', kind: 'deployment', name: 'web' }, replicas: 3 });
    expect(decoded.deadlineMs).toBeGreaterThanOrEqual(before + TIMEOUT_SECONDS * 1000);
    expect(decoded.deadlineMs).toBeLessThanOrEqual(Date.now() + TIMEOUT_SECONDS * 1000);
    agent.send({ operationResult: resultMessage(sent.operationId, { ok: true, result: null, resourceVersions: {} }) });
  });

  it('refuses bad bodies with a 400 naming the operation and the field, sending the agent nothing', async () => {
    const sentBefore = agent.received.filter((m) => m.operation).length;
    const cases: [string, unknown, string][] = [
      ['/kubernetes/ops', { scaleManifest: {} }, 'the body must be a JSON array'],
      ['/kubernetes/ops', [], 'no operations given'],
      [
        '/kubernetes/ops',
        [{ scaleManifest: { location: 'shop', manifestName: 'deployment web', replicas: 1 } }],
        'scaleManifest[0].account: empty',
      ],
      [
        '/kubernetes/ops',
        [{ scaleManifest: { account: 'dev', location: 'shop', manifestName: 'deployment web', replicas: 'two' } }],
        'scaleManifest[0].replicas',
      ],
      [
        '/kubernetes/ops',
        [
          { scaleManifest: { account: 'dev', location: 'shop', manifestName: 'deployment web', replicas: 1 } },
          { scaleManifest: { account: 'dev', location: 'shop', replicas: 1 } },
        ],
        'scaleManifest[1].manifestName: empty',
      ],
      [
        '/kubernetes/ops/scaleManifest',
        { account: 'dev', location: 'other', manifestName: 'deployment web', replicas: 1 },
        'scaleManifest[0].location: wrongNamespace',
      ],
      [
        '/ops',
        [{ scaleManifest: { account: 'dev', location: 'shop', manifestName: 'x y', replicas: 1 } }],
        'cloudProvider',
      ],
    ];
    for (const [path, body, field] of cases) {
      const r = await post(path, body);
      expect({ path, field, status: r.status }).toEqual({ path, field, status: 400 });
      expect(r.body).toMatchObject({ code: 'SA_ERR_INVALID_INPUT', message: 'Validation Failed' });
      expect((r.body.errors as string[]).join('\n'), path).toContain(field);
    }
    // An operation with no converter gets Clouddriver's own message (what Orca's Run Job cancel, destroyJob, gets).
    const unknown = await post('/kubernetes/ops', [{ kubectlApply: { account: 'dev' } }]);
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({
      code: 'SA_ERR_INVALID_INPUT',
      message: "No atomic operation converter found for description 'kubectlApply' and cloud provider 'kubernetes'",
    });
    const long = await post(`/kubernetes/ops?clientRequestId=${'x'.repeat(256)}`, []);
    expect(long.status).toBe(400);
    expect(long.body).toMatchObject({
      code: 'SA_ERR_INVALID_INPUT',
      message: 'querystring/clientRequestId must NOT have more than 255 characters',
    });
    expect(agent.received.filter((m) => m.operation)).toHaveLength(sentBefore);
  });
});
