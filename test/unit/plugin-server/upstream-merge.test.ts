import { describe, expect, it } from 'vitest';
import { operationAccounts } from '../../../src/plugin-server/upstream/front.js';
import { mergeSides, type Side } from '../../../src/plugin-server/upstream/merge.js';

const ok = (body: unknown): Side => ({ ok: true, body });
const notFound: Side = { ok: false, status: 404, error: new Error('local 404') };
const down: Side = { ok: false, status: 504 };

describe('front mode merges (upstream/merge.ts)', () => {
  it('/applications: one entry per name, clusterNames merged, sorted by name', () => {
    const out = mergeSides(
      '/applications',
      ok([{ name: 'shop', attributes: { name: 'shop' }, clusterNames: { agent: ['deployment web'] } }]),
      ok([
        { name: 'Billing', attributes: { name: 'Billing' }, clusterNames: { classic: ['api'] } },
        { name: 'shop', attributes: { name: 'shop', email: 'a@b' }, clusterNames: { classic: ['replicaSet old'] } },
      ]),
    );
    expect(out).toEqual(
      ok([
        { name: 'Billing', attributes: { name: 'Billing' }, clusterNames: { classic: ['api'] } },
        {
          name: 'shop',
          attributes: { name: 'shop', email: 'a@b' },
          clusterNames: { classic: ['replicaSet old'], agent: ['deployment web'] },
        },
      ]),
    );
  });

  it('/applications/{app}: 404 only when both sides say so; clusters of both; cloudProviders joined', () => {
    expect(mergeSides('/applications/:app', notFound, { ok: false, status: 404 })).toBe(notFound);
    const classic = { name: 'shop', attributes: { name: 'shop', cloudProviders: 'aws' }, clusters: { classic: [] } };
    expect(mergeSides('/applications/:app', notFound, ok(classic))).toEqual(ok(classic));
    const agent = { name: 'shop', attributes: { name: 'shop', cloudProviders: 'kubernetes' }, clusters: { agent: [] } };
    expect(mergeSides('/applications/:app', ok(agent), ok(classic))).toEqual(
      ok({
        name: 'shop',
        attributes: { name: 'shop', cloudProviders: 'aws,kubernetes' },
        clusters: { classic: [], agent: [] },
      }),
    );
  });

  it('/search: one result set, results concatenated, totalMatches summed', () => {
    const up = [{ platform: 'aws', totalMatches: 2, pageSize: 10, results: [{ a: 1 }, { a: 2 }] }];
    const local = [{ platform: 'kubernetes', totalMatches: 1, pageSize: 10, results: [{ a: 3 }] }];
    expect(mergeSides('/search', ok(local), ok(up))).toEqual(
      ok([{ platform: 'aws', totalMatches: 3, pageSize: 10, results: [{ a: 1 }, { a: 2 }, { a: 3 }] }]),
    );
  });

  it('/securityGroups: account maps merged; /credentials: a name once', () => {
    expect(
      mergeSides(
        '/securityGroups',
        ok({ agent: { kubernetes: { ns: [{ name: 'np' }] } } }),
        ok({ classic: { aws: { 'us-east-1': [{ name: 'sg' }] } } }),
      ),
    ).toEqual(
      ok({ classic: { aws: { 'us-east-1': [{ name: 'sg' }] } }, agent: { kubernetes: { ns: [{ name: 'np' }] } } }),
    );
    expect(mergeSides('/credentials', ok([{ name: 'a' }]), ok([{ name: 'a' }, { name: 'b' }]))).toEqual(
      ok([{ name: 'a' }, { name: 'b' }]),
    );
  });

  it('an upstream without an answer leaves the local part; a local error other than 404 stands', () => {
    expect(mergeSides('/applications', ok([{ name: 'x' }]), down)).toEqual(ok([{ name: 'x' }]));
    const bad: Side = { ok: false, status: 400, error: new Error('bad') };
    expect(mergeSides('/search', bad, ok([]))).toBe(bad);
  });
});

describe('operationAccounts', () => {
  it('reads account or its alias credentials from every operation', () => {
    expect(
      operationAccounts(
        [{ deployManifest: { account: 'a' } }, { createServerGroup: { credentials: 'b' } }, { x: 'not an object' }],
        false,
      ),
    ).toEqual(['a', 'b']);
    expect(operationAccounts({ credentials: 'c' }, true)).toEqual(['c']);
    expect(operationAccounts({ not: 'a list' }, false)).toEqual([]);
  });
});
