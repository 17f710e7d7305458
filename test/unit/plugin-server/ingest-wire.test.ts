import { status as GrpcStatus } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_INDEX_OPTIONS, indexOptionsOf } from '../../../src/plugin-server/cache/store.js';
import { APPLICATION_INDEX } from '../../../src/plugin-server/views/app-index.js';
import {
  convertBatch,
  messageType,
  nextSeq,
  ProtocolError,
  scopedMessage,
  validateHello,
} from '../../../src/plugin-server/ingest/wire.js';
import { ChangeType, PROTOCOL_VERSION, type Change, type ChangeBatch } from '../../../src/shared/proto.js';
import { thrown } from '../../infra/assertions.js';
import { account, change, configMap } from './helpers.js';

const convert = (changes: Change[], over: Partial<Parameters<typeof convertBatch>[1]> = {}) =>
  convertBatch({ seq: 1, changes, observedAtMs: 0 } as ChangeBatch, {
    maxChanges: 100,
    defer: false,
    indexes: [APPLICATION_INDEX],
    indexOptions: () => DEFAULT_INDEX_OPTIONS,
    ...over,
  });

const refusal = (f: () => unknown): ProtocolError => thrown(ProtocolError, f);

describe('agent message checks (ingest/wire.ts)', () => {
  it('converts a batch into store changes, with index keys and Secret data stripped', () => {
    const deploy = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'web',
        namespace: 'shop',
        resourceVersion: '7',
        annotations: { 'moniker.spinnaker.io/application': 'shop', 'moniker.spinnaker.io/cluster': 'deployment web' },
      },
    };
    const secret = { ...configMap('creds', '8'), kind: 'Secret', data: { password: 'aHVudGVyMg==' } };
    const { changes, bytes, deferred } = convert([
      change('dev', 'ADDED', deploy),
      change('dev', 'MODIFIED', secret),
      change('dev', 'DELETED', configMap('old', '9')),
    ]);
    expect(deferred).toBeUndefined();
    expect(changes.map((c) => [c.type, c.kind, c.name, c.resourceVersion])).toEqual([
      ['ADDED', 'Deployment', 'web', '7'],
      ['MODIFIED', 'Secret', 'creds', '8'],
      ['DELETED', 'ConfigMap', 'old', '9'],
    ]);
    expect(changes[0]!.index).toEqual({ application: 'shop', cluster: 'deployment web', owner: '' });
    expect(JSON.parse(changes[1]!.json)).not.toHaveProperty('data');
    expect(changes[2]!.index).toBeUndefined();
    expect(bytes).toBe(changes.reduce((n, c) => n + c.json.length + 256, 0));
  });

  it('asks each account its index options once per run of that account', () => {
    const asked: string[] = [];
    const cm = { ...configMap('a', '1'), metadata: { ...configMap('a', '1').metadata } };
    const { changes } = convert(
      [change('dev', 'ADDED', cm), change('dev', 'ADDED', configMap('b', '2')), change('prod', 'ADDED', cm)],
      {
        indexOptions: (a) => {
          asked.push(a);
          return indexOptionsOf({ cacheAllApplicationRelationships: a === 'prod' });
        },
      },
    );
    expect(asked).toEqual(['dev', 'prod']);
    expect(changes).toHaveLength(3);
  });

  it('leaves the JSON checks to a thread when deferred, but checks key fields at once', () => {
    const { changes, deferred } = convert([change('dev', 'ADDED', configMap('a', '1'))], { defer: true });
    expect(deferred?.build().ends).toHaveLength(1);
    expect(changes[0]!.index).toBeUndefined();
    const bad = { ...change('dev', 'ADDED', configMap('a', '1')), name: 'bad name' };
    expect(refusal(() => convert([bad], { defer: true })).message).toBe(
      'change 0 (ConfigMap default/bad name): invalid name',
    );
  });

  it.each<[string, Partial<Change>, string]>([
    ['a body that is not JSON', { objectJson: Buffer.from('{nope') }, 'object_json is not valid JSON'],
    ['a JSON array', { objectJson: Buffer.from('[1]') }, 'object_json must be a JSON object'],
    ['an unknown type', { type: 99 as ChangeType }, 'invalid type 99'],
    ['no account', { account: '' }, 'account, api_version and kind are required'],
    ['a non-ASCII name', { name: 'wébapp' }, 'invalid name'],
    ['a long namespace', { namespace: 'n'.repeat(64) }, 'invalid namespace'],
    ['no resourceVersion', { resourceVersion: '' }, 'invalid resource_version'],
    ['a uid with spaces', { uid: 'a b' }, 'invalid uid'],
    ['an ADDED without object', { objectJson: new Uint8Array() }, 'object_json is required for ADDED'],
  ])('refuses %s, naming the change', (_, patch, error) => {
    const good = change('dev', 'ADDED', configMap('ok', '1'));
    const e = refusal(() => convert([good, { ...good, ...patch }]));
    expect(e.message).toMatch(/^change 1 \(/);
    expect(e.message).toContain(error);
    expect(e.grpcCode).toBe(GrpcStatus.INVALID_ARGUMENT);
  });

  it('refuses a batch over the limit', () => {
    const c = change('dev', 'ADDED', configMap('a', '1'));
    expect(refusal(() => convert([c, c, c], { maxChanges: 2 })).message).toBe('batch of 3 changes exceeds 2');
  });

  it('requires increasing seq', () => {
    expect(nextSeq(0, 1)).toBe(1);
    expect(nextSeq(1, 5)).toBe(5);
    expect(refusal(() => nextSeq(5, 5)).message).toContain('seq 5 does not follow 5');
    expect(() => nextSeq(5, Number.MAX_SAFE_INTEGER + 2)).toThrow(ProtocolError);
  });

  it('checks sync and bookmark messages', () => {
    const kind = { group: 'apps', version: 'v1', kind: 'Deployment', resource: '', namespaced: true };
    expect(
      scopedMessage({ syncEnd: { seq: 3, account: 'dev', kind, namespace: 'shop', resourceVersion: '42' } }),
    ).toEqual({
      kind: 'syncEnd',
      seq: 3,
      scope: { account: 'dev', group: 'apps', kind: 'Deployment', namespace: 'shop' },
      version: 'v1',
      resourceVersion: '42',
    });
    expect(
      refusal(() => scopedMessage({ bookmark: { seq: 1, account: 'dev', kind, namespace: '', resourceVersion: '' } }))
        .message,
    ).toBe('bookmark: invalid resource_version');
    expect(
      refusal(() =>
        scopedMessage({ syncStart: { seq: 1, account: 'dev', kind: { ...kind, kind: '1x' }, namespace: '' } }),
      ).message,
    ).toMatch(/^syncStart: invalid kind key/);
    expect(refusal(() => scopedMessage({})).message).toBe('unknown or empty message (empty)');
  });

  it('checks Hello: agent id, protocol version, account count and roles', () => {
    const hello = {
      agentId: 'agent-1',
      version: '1',
      zone: '',
      protocolVersion: PROTOCOL_VERSION,
      shareLoad: false,
      identity: {},
      accounts: [account('dev')],
    };
    expect(() => validateHello(hello, 10)).not.toThrow();
    expect(refusal(() => validateHello({ ...hello, agentId: '' }, 10)).message).toMatch(/agent_id/);
    const newer = refusal(() => validateHello({ ...hello, protocolVersion: PROTOCOL_VERSION + 1 }, 10));
    expect(newer.grpcCode).toBe(GrpcStatus.FAILED_PRECONDITION);
    expect(refusal(() => validateHello(hello, 0)).message).toBe('1 accounts exceed 0');
    const roles = { ...account('dev'), permissions: { read: ['dev ops'], write: [] } };
    expect(refusal(() => validateHello({ ...hello, accounts: [roles] }, 10)).message).toBe(
      'account dev: invalid role "dev ops" in permissions',
    );
    expect(messageType({ heartbeat: { sentAtMs: 1 } })).toBe('heartbeat');
  });
});
