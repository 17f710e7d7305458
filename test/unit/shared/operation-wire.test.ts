import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatIssues, parseOperations } from '../../../src/plugin-server/api/descriptions/index.js';
import {
  checkDeadline,
  decodeOperation,
  failureMessage,
  OPERATION_TYPES,
  operationMessage,
  type NormalizedOperation,
} from '../../../src/shared/ops/index.js';
import type { Operation } from '../../../src/shared/proto.js';

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../../fixtures/ops/${name}`, import.meta.url), 'utf8')) as unknown;

const NOW = Date.parse('2026-11-27T05:00:00Z');

/** What the REST API hands the dispatcher: every Clouddriver operation of the fixtures, through the real parser. */
function parsedFixtures(): NormalizedOperation[] {
  const bodies = [
    fixture('deploy-multi-doc.json'),
    fixture('deploy-crd.json'),
    fixture('delete-label-selector.json'),
    fixture('orca-stages.json'),
    [{ cleanupArtifacts: { account: 'a', manifests: [] } }],
  ];
  return bodies.flatMap((body) => {
    const r = parseOperations(body, { endpoint: 'kubernetes' });
    if (!r.ok) throw new Error(formatIssues(r.errors).join('\n'));
    return r.operations;
  });
}

const LIVE_READS: NormalizedOperation[] = [
  { type: 'liveGet', account: 'a', payload: { target: { location: 'ns', kind: 'deployment', name: 'web' } } },
  { type: 'liveList', account: 'a', payload: { location: 'ns', kind: 'pod', labelSelector: 'app=web' } },
  { type: 'liveLogs', account: 'a', payload: { location: 'ns', pod: 'web-1', limitBytes: 1024 } },
];

const message = (overrides: Partial<Operation>): Operation => ({
  operationId: 't1.0',
  account: 'a',
  type: 'liveGet',
  payloadJson: Buffer.from(JSON.stringify({ target: { location: 'ns', kind: 'pod', name: 'p' } })),
  deadlineMs: NOW + 60_000,
  sentBeforeOnSessions: [],
  ...overrides,
});

describe('the operation wire: one normalized shape, an absolute deadline', () => {
  it('carries every operation the REST parser produces, and the live reads, unchanged', () => {
    const ops = [...parsedFixtures(), ...LIVE_READS];
    // Every type the wire knows is among them.
    expect([...new Set(ops.map((op) => op.type))].sort()).toEqual([...OPERATION_TYPES].sort());
    for (const op of ops) {
      const decoded = decodeOperation(operationMessage('t1.0', op, NOW + 1000), NOW);
      expect(decoded, op.type).toEqual({ ok: true, op, deadlineMs: NOW + 1000 });
    }
  });

  it('refuses a raw Clouddriver description, naming the fields a normalized payload has', () => {
    const body = fixture('deploy-multi-doc.json') as { deployManifest: Record<string, unknown> }[];
    const raw = body[0]!.deployManifest;
    const decoded = decodeOperation(
      message({ type: 'deployManifest', payloadJson: Buffer.from(JSON.stringify(raw)) }),
      NOW,
    );
    expect(decoded.ok).toBe(false);
    if (decoded.ok) return;
    expect(decoded.code).toBe('SA_ERR_INVALID_INPUT');
    expect(decoded.error).toContain('is not a normalized deployManifest payload');
    expect(decoded.error).toContain('enableArtifactBinding');
    expect(decoded.error).toContain('post Clouddriver descriptions to the REST API');
  });

  it('refuses malformed messages with the operation id and what is wrong', () => {
    const cases: [Partial<Operation>, string][] = [
      [{ type: 'kubectlApply' }, 'unknown operation type "kubectlApply"'],
      [{ account: '' }, 'account is empty'],
      [{ payloadJson: Buffer.from('{not json') }, 'payload_json is not JSON'],
      [{ payloadJson: Buffer.from('[]') }, 'payload_json must be a JSON object'],
      [{ payloadJson: Buffer.from('null') }, 'payload_json must be a JSON object'],
    ];
    for (const [overrides, error] of cases) {
      const decoded = decodeOperation(message(overrides), NOW);
      expect(decoded, error).toMatchObject({ ok: false, code: 'SA_ERR_INVALID_INPUT', retryable: false });
      if (!decoded.ok) expect(decoded.error).toContain(`operation t1.0: ${error}`);
    }
  });

  it('reads deadline_ms only as epoch milliseconds: 0 is none, a duration is refused, a past one is a timeout', () => {
    expect(decodeOperation(message({ deadlineMs: 0 }), NOW)).toMatchObject({ ok: true, deadlineMs: 0 });
    const duration = decodeOperation(message({ deadlineMs: 30_000 }), NOW);
    expect(duration).toMatchObject({ ok: false, code: 'SA_ERR_INVALID_INPUT' });
    if (!duration.ok) expect(duration.error).toContain('deadline_ms 30000 is not 0 or a time in milliseconds');
    // A deadline that passed while the message travelled fails at once instead of running with no deadline.
    const passed = decodeOperation(message({ deadlineMs: NOW - 5 }), NOW);
    expect(passed).toEqual({
      ok: false,
      code: 'SA_ERR_TIMEOUT',
      retryable: true,
      error: 'operation t1.0: its deadline passed 5 ms before it could start',
    });
    expect(checkDeadline(NOW, NOW)).toBe('passed');
    expect(checkDeadline(NOW + 1, NOW)).toBeUndefined();
    expect(checkDeadline(-1, NOW)).toBe('invalid');
    expect(checkDeadline(NOW + 0.5, NOW)).toBe('invalid');
  });

  it('answers a refused message in the result shape the task runner reads', () => {
    const r = failureMessage(
      { operationId: 't1.0', type: 'scaleManifest' },
      { code: 'SA_ERR_TIMEOUT', error: 'late', retryable: true },
    );
    expect(r).toMatchObject({ operationId: 't1.0', ok: false, error: 'late', resourceVersions: {} });
    const body = JSON.parse(Buffer.from(r.resultJson).toString('utf8')) as Record<string, unknown>;
    expect(body).toMatchObject({ messages: [], errorCode: 'SA_ERR_TIMEOUT', retryable: true });
    expect(body.result).toMatchObject({ operation: 'KubernetesScaleManifestOperation' });
  });
});
