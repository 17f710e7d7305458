import { describe, expect, it } from 'vitest';
import {
  accountSynced,
  planReflectors,
  rediscoveryDone,
  requestRediscovery,
  resumeKey,
  resumeVersions,
  type RediscoveryState,
} from '../../../src/agent/account-step.js';
import { initialLoopState, nextRequest } from '../../../src/agent/reflector-step.js';
import type { ResumePoint } from '../../../src/shared/proto.js';

const point = (account: string, group: string, kind: string, namespace: string, rv: string): ResumePoint => ({
  account,
  kind: { group, version: 'v1', kind, resource: `${kind.toLowerCase()}s`, namespaced: namespace !== '' },
  namespace,
  resourceVersion: rv,
});

describe('account runner: resume after reconnect', () => {
  const points: ResumePoint[] = [
    point('prod', '', 'ConfigMap', 'web', '120'),
    point('prod', 'apps', 'Deployment', '', '340'),
    point('staging', '', 'ConfigMap', 'web', '999'),
    { account: 'prod', kind: undefined, namespace: 'web', resourceVersion: '5' },
  ];

  it("keeps this account's points with a kind, keyed by scope", () => {
    expect([...resumeVersions('prod', points)]).toEqual([
      ['prod//ConfigMap/web', '120'],
      ['prod/apps/Deployment/', '340'],
    ]);
  });

  it('scopes the server acknowledged resume with a WATCH from its resourceVersion; the others list', () => {
    const resume = resumeVersions('prod', points);
    const first = (group: string, kind: string, namespace: string) => {
      const s = initialLoopState(resume.get(resumeKey('prod', group, kind, namespace)), true);
      return [nextRequest(s), s.resourceVersion, s.synced];
    };
    expect(first('', 'ConfigMap', 'web')).toEqual(['watch', '120', true]);
    expect(first('apps', 'Deployment', '')).toEqual(['watch', '340', true]);
    expect(first('', 'ConfigMap', 'other')).toEqual(['streaming-list', undefined, false]);
    expect(first('', 'Secret', 'web')).toEqual(['streaming-list', undefined, false]);
  });

  it('starts every wanted reflector after a reconnect, and only the difference after rediscovery', () => {
    expect(planReflectors([], ['a', 'b'])).toEqual({ stop: [], start: ['a', 'b'] });
    expect(planReflectors(['a', 'b', 'c'], ['b', 'd', 'c'])).toEqual({ stop: ['a'], start: ['d'] });
    expect(planReflectors(['a'], [])).toEqual({ stop: ['a'], start: [] });
  });
});

describe('account runner: readiness', () => {
  const synced = { synced: true, state: 'watching' };
  it('is synced in a session, when ready, with every scope listed except forbidden ones', () => {
    expect(accountSynced(true, 'ready', [synced, { synced: false, state: 'forbidden' }])).toBe(true);
    expect(accountSynced(true, 'ready', [synced, { synced: false, state: 'listing' }])).toBe(false);
    expect(accountSynced(true, 'ready', [synced, { synced: false, state: 'pending' }])).toBe(false);
    expect(accountSynced(false, 'ready', [synced])).toBe(false);
    expect(accountSynced(true, 'failed', [synced])).toBe(false);
    expect(accountSynced(true, 'ready', [])).toBe(true);
  });
});

describe('account runner: rediscovery', () => {
  it('runs one at a time; any number of requests during a run make exactly one more run', () => {
    let s: RediscoveryState = { running: false, again: false };
    const runs: boolean[] = [];
    const request = () => {
      const r = requestRediscovery(s);
      s = r.state;
      runs.push(r.run);
    };
    const done = () => {
      const r = rediscoveryDone(s);
      s = r.state;
      runs.push(r.run);
    };
    request(); // starts
    request(); // queued
    request(); // merged with the queued one
    done(); // the queued run starts
    done(); // idle
    request(); // starts again
    expect(runs).toEqual([true, false, false, true, false, true]);
    expect(s).toEqual({ running: true, again: false });
  });
});
