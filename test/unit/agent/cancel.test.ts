/**
 * The agent's decision on a Cancel (ops/cancel.ts): an operation none of whose writes has gone out stops; one that has
 * sent a write runs to its end; one not running is left alone. The requester below records what reaches it: it stands
 * in for the API server, which these cases never need to answer.
 */
import { describe, expect, it } from 'vitest';
import { CancelPoint, cancelDecision, cancelledBy } from '../../../src/agent/ops/cancel.js';
import type { KubeRequester } from '../../../src/agent/kube/client.js';

function recorder(): { kube: KubeRequester; seen: string[] } {
  const seen: string[] = [];
  const kube: KubeRequester = {
    request: <T>(method: string, path: string) => {
      seen.push(`${method} ${path}`);
      return Promise.resolve({} as T);
    },
    getJson: <T>(path: string) => {
      seen.push(`GET ${path}`);
      return Promise.resolve({} as T);
    },
    getText: (path: string) => {
      seen.push(`GET ${path}`);
      return Promise.resolve('');
    },
  };
  return { kube, seen };
}

describe('cancelDecision', () => {
  it('stops an operation with no write sent, lets one with a write sent run to its end, ignores one not running', () => {
    expect(cancelDecision({ running: true, writesSent: 0 })).toBe('stop');
    expect(cancelDecision({ running: true, writesSent: 1 })).toBe('run-to-end');
    expect(cancelDecision({ running: true, writesSent: 3 })).toBe('run-to-end');
    expect(cancelDecision({ running: false, writesSent: 0 })).toBe('ignore');
  });
});

describe('CancelPoint', () => {
  it('reads do not count as writes: a cancel after them stops the operation, and its next write is never sent', async () => {
    const point = new CancelPoint();
    const { kube, seen } = recorder();
    const guarded = point.guard(kube);
    await guarded.getJson('/api/v1/namespaces/a/configmaps/c');
    await guarded.request('GET', '/apis/apps/v1/namespaces/a/deployments/d');
    expect(point.request('cancelled by alice')).toBe('stop');
    expect(point.signal.aborted).toBe(true);
    expect(cancelledBy(point.signal)?.message).toBe('cancelled before it changed anything: cancelled by alice');
    await expect(guarded.request('PATCH', '/api/v1/namespaces/a/configmaps/c', { body: {} })).rejects.toMatchObject({
      kind: 'CANCELLED',
    });
    expect(seen).toEqual(['GET /api/v1/namespaces/a/configmaps/c', 'GET /apis/apps/v1/namespaces/a/deployments/d']);
  });

  it('a cancel after a write went out leaves the operation running and records why', async () => {
    const point = new CancelPoint();
    const { kube, seen } = recorder();
    const guarded = point.guard(kube);
    await guarded.request('DELETE', '/api/v1/namespaces/a/configmaps/c');
    expect(point.request('cancelled by alice')).toBe('run-to-end');
    expect(point.signal.aborted).toBe(false);
    expect(point.declined).toBe('cancelled by alice');
    // Its later writes still go out: the operation finishes what it started.
    await guarded.request('POST', '/api/v1/namespaces/a/configmaps', { body: {} });
    expect(seen).toEqual(['DELETE /api/v1/namespaces/a/configmaps/c', 'POST /api/v1/namespaces/a/configmaps']);
  });

  it('an abort that is not a cancel (the deadline, shutdown) is not reported as cancelled', () => {
    const c = new AbortController();
    c.abort(new Error('deadline'));
    expect(cancelledBy(c.signal)).toBeUndefined();
  });
});
