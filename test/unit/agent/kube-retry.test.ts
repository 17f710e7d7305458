import { describe, expect, it } from 'vitest';
import { isTransient, mayApplyTwice, retryDelayMs, surelyNotApplied } from '../../../src/agent/kube/client.js';
import { NotSentError } from '../../../src/agent/kube/http2-pool.js';
import { KubeApiError, ScaleAgentError } from '../../../src/shared/errors.js';

describe('operation retries of transient API errors', () => {
  it('backs off exponentially with ±50 % jitter, capped at 5 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => retryDelayMs(n, undefined, 0.5))).toEqual([
      200, 400, 800, 1600, 3200, 5000, 5000,
    ]);
    expect(retryDelayMs(1, undefined, 0)).toBe(100);
    expect(retryDelayMs(1, undefined, 0.999)).toBe(300);
  });

  it('waits as long as Retry-After says (capped at 30 s), instead of its own backoff', () => {
    expect(retryDelayMs(1, 2, 0.5)).toBe(2000);
    expect(retryDelayMs(4, 0, 0.5)).toBe(0);
    expect(retryDelayMs(1, 3600, 0.5)).toBe(30_000);
  });

  it('retries 429, 5xx and unreachable servers, never a client error or a conflict', () => {
    expect(isTransient(new KubeApiError(429, 'TooManyRequests', 'slow down', undefined, 1))).toBe(true);
    expect(isTransient(new KubeApiError(500, 'InternalError', 'etcd'))).toBe(true);
    expect(isTransient(new KubeApiError(503, 'ServiceUnavailable', 'x'))).toBe(true);
    expect(isTransient(new ScaleAgentError('UNAVAILABLE', 'API server unreachable: ECONNRESET'))).toBe(true);
    for (const status of [400, 403, 404, 409, 410, 422]) {
      expect(isTransient(new KubeApiError(status, '', 'no'))).toBe(false);
    }
    expect(isTransient(new ScaleAgentError('TIMEOUT', 'deadline'))).toBe(false);
    expect(isTransient(new Error('parse error'))).toBe(false);
  });

  it('a KubeApiError carries the catalogue code of its status', () => {
    expect(new KubeApiError(403, 'Forbidden', 'no').code).toBe('SA_ERR_FORBIDDEN');
    expect(new KubeApiError(429, '', 'x').code).toBe('SA_ERR_UNAVAILABLE');
    expect(new KubeApiError(502, '', 'x').code).toBe('SA_ERR_UNAVAILABLE');
    expect(new KubeApiError(404, 'NotFound', 'x').code).toBe('SA_ERR_NOT_FOUND');
  });

  it('repeats a create or a JSON patch only when the API server surely did not act on it', () => {
    expect(mayApplyTwice('POST', 'application/json')).toBe(true);
    expect(mayApplyTwice('PATCH', 'application/json-patch+json')).toBe(true);
    for (const type of [
      'application/merge-patch+json',
      'application/strategic-merge-patch+json',
      'application/apply-patch+yaml',
    ]) {
      expect(mayApplyTwice('PATCH', type)).toBe(false);
    }
    expect(mayApplyTwice('PUT', 'application/json')).toBe(false);
    expect(mayApplyTwice('DELETE', undefined)).toBe(false);
    expect(mayApplyTwice('GET', undefined)).toBe(false);

    const refused = new ScaleAgentError('UNAVAILABLE', 'unreachable', {
      cause: new NotSentError(new Error('ECONNREFUSED')),
    });
    expect(surelyNotApplied(refused)).toBe(true);
    expect(surelyNotApplied(new KubeApiError(429, 'TooManyRequests', 'slow down'))).toBe(true);
    // Sent, then the connection went or no answer came: it may have been applied.
    expect(surelyNotApplied(new ScaleAgentError('UNAVAILABLE', 'stream closed before a response'))).toBe(false);
    expect(surelyNotApplied(new KubeApiError(500, 'InternalError', 'etcd timeout'))).toBe(false);
    expect(surelyNotApplied(new KubeApiError(503, 'ServiceUnavailable', 'x'))).toBe(false);
  });
});
