import { createRequire } from 'node:module';
import {
  credentials,
  loadPackageDefinition,
  type ClientDuplexStream,
  status as GrpcStatus,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PluginServer } from '../../../src/plugin-server/server.js';
import { AccountState, ChangeType, PROTOCOL_VERSION, type Change } from '../../../src/shared/proto.js';
import { outranks } from '../../../src/plugin-server/ownership.js';
import { account, change, configMap, eventually, getJson, startServer, TestAgent } from './helpers.js';

describe('plugin-server sessions over a real gRPC stream', () => {
  let server: PluginServer;
  let base: string;
  let address: string;
  let logs: string[];
  const agents: TestAgent[] = [];
  const agent = () => {
    const a = new TestAgent(address);
    agents.push(a);
    return a;
  };

  beforeEach(async () => {
    ({ server, base, address, logs } = await startServer('accounts: {gracePeriodSeconds: 1}'));
  });
  afterEach(async () => {
    for (const a of agents.splice(0)) a.close();
    await server.stop();
  });

  const manifest = (acct: string, ns: string, name: string) =>
    getJson(`${base}/manifests/${acct}/${ns}/${encodeURIComponent(name)}`);

  it('registers accounts, applies batches in order, acknowledges them, and serves the cache', async () => {
    const a = agent();
    const welcome = await a.hello([account('dev')]);
    expect(welcome.acceptedAccounts).toEqual(['dev']);
    expect(welcome.rejectedAccounts).toEqual([]);
    expect(welcome.resumePoints).toEqual([]);
    expect(welcome.maxUnackedBytes).toBeGreaterThan(0);

    const scope = {
      account: 'dev',
      kind: { group: '', version: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespaced: true },
      namespace: '',
    };
    await a.data({ syncStart: { ...scope, seq: 0 } });
    await a.batch([change('dev', 'ADDED', configMap('a', '10', { k: 'v1' }))]);
    await a.data({ syncEnd: { ...scope, seq: 0, resourceVersion: '10' } });
    const got = await manifest('dev', 'default', 'configMap a');
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      account: 'dev',
      name: 'configMap a',
      location: 'default',
      manifest: { data: { k: 'v1' } },
      status: { stable: { state: true }, failed: { state: false } },
      warnings: [],
    });

    // A replayed older batch (after a reconnect) changes nothing; a newer one applies.
    await a.batch([change('dev', 'MODIFIED', configMap('a', '9', { k: 'old' }))]);
    await a.batch([change('dev', 'MODIFIED', configMap('a', '11', { k: 'v2' }))]);
    expect((await manifest('dev', 'default', 'cm a')).body).toMatchObject({ manifest: { data: { k: 'v2' } } });

    await a.batch([change('dev', 'DELETED', configMap('a', '12'))]);
    expect((await manifest('dev', 'default', 'configMap a')).status).toBe(404);

    // The next stream of the same agent gets a resume point for the completed sync.
    a.close();
    const b = agent();
    const again = await b.hello([account('dev')]);
    expect(again.resumePoints).toEqual([
      { ...scope, kind: { ...scope.kind, resource: '', namespaced: false }, resourceVersion: '12' },
    ]);
  });

  it('rejects an account name held by a different cluster; the original keeps working', async () => {
    const a = agent();
    await a.hello([account('shared')]);
    const b = agent();
    const welcome = await b.hello([account('shared', '10.9.9.9:6443', 'bb'.repeat(32)), account('other')], 'agent-2');
    expect(welcome.acceptedAccounts).toEqual(['other']);
    expect(welcome.rejectedAccounts).toHaveLength(1);
    expect(welcome.rejectedAccounts[0]!.name).toBe('shared');
    expect(welcome.rejectedAccounts[0]!.reason).toMatch(/already registered by agent agent-1/);

    // The impostor's changes for the name are dropped (still acknowledged); the original's apply.
    await b.batch([change('shared', 'ADDED', configMap('evil', '1'))]);
    await a.batch([change('shared', 'ADDED', configMap('good', '2'))]);
    expect((await manifest('shared', 'default', 'configMap evil')).status).toBe(404);
    expect((await manifest('shared', 'default', 'configMap good')).status).toBe(200);
    const acct = await getJson(`${base}/agents/kubernetes/accounts/shared`);
    expect(acct.body).toMatchObject({
      name: 'shared',
      status: 'ACTIVE',
      agentId: 'agent-1',
      kubeHost: '10.0.0.1:6443',
    });
  });

  it('a malformed or out-of-protocol message closes only that stream', async () => {
    const good = agent();
    await good.hello([account('dev')]);

    const noHello = agent();
    noHello.send({ heartbeat: { sentAtMs: 1 } });
    expect((await noHello.ended).code).toBe(GrpcStatus.FAILED_PRECONDITION);

    /** How a stream ends whose account's first batch is one ConfigMap change with `bad` fields. */
    const afterBadChange = async (name: string, bad: Partial<Change>) => {
      const a = agent();
      await a.hello([account(name)]);
      a.send({
        changeBatch: { seq: 1, observedAtMs: 0, changes: [{ ...change(name, 'ADDED', configMap('x', '1')), ...bad }] },
      });
      return a.ended;
    };
    const notJson = { code: GrpcStatus.INVALID_ARGUMENT, details: expect.stringMatching(/not valid JSON/) };
    expect(await afterBadChange('prod', { objectJson: Buffer.from('{not json') })).toMatchObject(notJson);
    // Braced like an object but not JSON: must be refused, never stored (it would break every read of the account).
    expect(await afterBadChange('staging', { objectJson: Buffer.from('{"a": }') })).toMatchObject(notJson);

    const badSeq = agent();
    await badSeq.hello([account('qa')]);
    await badSeq.batch([change('qa', 'ADDED', configMap('x', '1'))]);
    badSeq.send({ changeBatch: { seq: 1, observedAtMs: 0, changes: [] } });
    expect((await badSeq.ended).code).toBe(GrpcStatus.INVALID_ARGUMENT);

    const badType = await afterBadChange('qa2', { type: ChangeType.CHANGE_TYPE_UNSPECIFIED });
    expect(badType.code).toBe(GrpcStatus.INVALID_ARGUMENT);

    const badRole = agent();
    badRole.send({
      hello: {
        agentId: 'agent-bad-role',
        version: 'test',
        zone: '',
        identity: {},
        accounts: [{ ...account('roles'), permissions: { read: ['ok', 'two words'], write: [] } }],
        protocolVersion: PROTOCOL_VERSION,
        shareLoad: false,
      },
    });
    expect(await badRole.ended).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      details: expect.stringMatching(/invalid role "two words"/),
    });

    // The good stream is untouched.
    await good.batch([change('dev', 'ADDED', configMap('still-fine', '5'))]);
    expect((await manifest('dev', 'default', 'configMap still-fine')).status).toBe(200);
    expect((await getJson(`${base}/armory/agents`)).body).toEqual([
      expect.objectContaining({ agentId: 'agent-1', accounts: ['dev'] }),
    ]);
  });

  it('validates every change of a batch, not only the first of a run of the same account and kind', async () => {
    const cases: [string, Record<string, unknown>][] = [
      ['kind', { kind: 'Bad Kind' }],
      ['apiVersion', { apiVersion: 'Not/A/Version' }],
      ['namespace', { namespace: 'bad namespace' }],
      ['name', { name: 'bad name' }],
      ['objectJson', { objectJson: Buffer.from('["an array"]') }],
    ];
    for (const [i, [field, bad]] of cases.entries()) {
      const a = agent();
      const acct = `v${i}`;
      await a.hello([account(acct)]);
      const ok = change(acct, 'ADDED', configMap('first', '1'));
      a.send({ changeBatch: { seq: 1, observedAtMs: 0, changes: [ok, { ...ok, name: 'second', ...bad }] } });
      expect((await a.ended).code, field).toBe(GrpcStatus.INVALID_ARGUMENT);
      expect((await manifest(acct, 'default', 'configMap first')).status, field).toBe(404);
    }
  });

  it('never stores Secret data, even when an agent sends it', async () => {
    const a = agent();
    await a.hello([account('dev')]);
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', namespace: 'default', resourceVersion: '3' },
      data: { password: Buffer.from('CANARY-123').toString('base64') },
      stringData: { token: 'CANARY-123' },
    };
    await a.batch([change('dev', 'ADDED', secret)]);
    const got = await manifest('dev', 'default', 'secret s');
    expect(got.status).toBe(200);
    expect(JSON.stringify(got.body)).not.toContain('CANARY');
    expect(JSON.stringify(got.body)).not.toContain(Buffer.from('CANARY-123').toString('base64'));
    expect(logs.join('')).not.toContain('CANARY');
  });

  it('orphans accounts when the agent leaves and removes them with their cache after the grace period', async () => {
    const a = agent();
    await a.hello([account('dev')]);
    await a.batch([change('dev', 'ADDED', configMap('a', '1'))]);
    a.send({
      accountStatus: {
        account: 'dev',
        state: AccountState.ACCOUNT_STATE_ACTIVE,
        error: 'cannot list secrets',
        forbiddenKinds: ['Secret'],
        kinds: [],
      },
    });
    type View = { state: string; errorMessage: string; forbiddenKinds: string[] };
    await eventually(
      () => getJson(`${base}/armory/accounts/dev`),
      (r) => (r.body as View).errorMessage === 'cannot list secrets',
    );
    a.close();
    const orphaned = await eventually(
      () => getJson(`${base}/armory/accounts/dev`),
      (r) => (r.body as View).state === 'ORPHANED',
    );
    // What the agent reported was its own status: nobody reports for an orphaned account (on any replica).
    expect(orphaned.body).toMatchObject({ errorMessage: '', forbiddenKinds: [] });
    // Still served while orphaned.
    expect((await manifest('dev', 'default', 'configMap a')).status).toBe(200);
    await eventually(
      () => getJson(`${base}/credentials/dev`),
      (r) => r.status === 404,
    );
    expect((await manifest('dev', 'default', 'configMap a')).status).toBe(404);
  });

  it('hands an account over between load-sharing agents on their running streams, cache and resume points kept', async () => {
    // Which agent ranks first for dev is the hash's to say (ownership.ts placementRank).
    const [hi, lo] = outranks('dev', 'agent-a', 'agent-b') ? ['agent-a', 'agent-b'] : ['agent-b', 'agent-a'];
    const first = agent();
    expect((await first.hello([account('dev'), account('prod')], lo, true)).acceptedAccounts).toEqual(['dev', 'prod']);
    const scope = {
      account: 'dev',
      kind: { group: '', version: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespaced: true },
      namespace: '',
    };
    await first.data({ syncStart: { ...scope, seq: 0 } });
    await first.batch([change('dev', 'ADDED', configMap('a', '10'))]);
    await first.data({ syncEnd: { ...scope, seq: 0, resourceVersion: '10' } });

    // The second agent outranks the holder: standby, and the holder is asked to hand dev over (prod stays).
    const second = agent();
    expect((await second.hello([account('dev')], hi, true)).rejectedAccounts).toEqual([
      { name: 'dev', reason: expect.stringMatching(/^standby: /) },
    ]);
    const ask = await first.next((m) => (m.accountsChanged?.handOver.length ?? 0) > 0);
    expect(ask.accountsChanged?.handOver).toEqual(['dev']);
    first.send({ accountsUpdate: { added: [], removed: [], handedOver: ['dev'] } });
    const handed = (await first.next((m) => m.accountsUpdateResult !== undefined)).accountsUpdateResult!;
    expect(handed.rejectedAccounts).toEqual([{ name: 'dev', reason: expect.stringMatching(/^standby: /) }]);

    // The standby is asked to offer dev again on its stream (not closed), and resumes where the cache stands.
    const promoted = await second.next((m) => (m.accountsChanged?.offerAgain.length ?? 0) > 0);
    expect(promoted.accountsChanged?.offerAgain).toEqual(['dev']);
    second.send({ accountsUpdate: { added: [account('dev')], removed: [], handedOver: [] } });
    const took = (await second.next((m) => m.accountsUpdateResult !== undefined)).accountsUpdateResult!;
    expect(took.acceptedAccounts).toEqual(['dev']);
    expect(took.resumePoints).toMatchObject([{ account: 'dev', resourceVersion: '10' }]);
    expect((await manifest('dev', 'default', 'configMap a')).status).toBe(200);

    // The former holder keeps prod; what it still sends for dev is dropped, not written.
    await first.batch([change('prod', 'ADDED', configMap('b', '11'))]);
    expect((await manifest('prod', 'default', 'configMap b')).status).toBe(200);
    await first.batch([change('dev', 'ADDED', configMap('late', '12'))]);
    expect((await manifest('dev', 'default', 'configMap late')).status).toBe(404);
  });

  it('adds and removes accounts on a live stream (AccountsUpdate)', async () => {
    const a = agent();
    await a.hello([account('dev')]);
    await a.batch([change('dev', 'ADDED', configMap('a', '1'))]);
    a.send({ accountsUpdate: { added: [account('prod')], removed: ['dev'], handedOver: [] } });
    const result = (await a.next((m) => m.accountsUpdateResult !== undefined)).accountsUpdateResult!;
    expect(result).toMatchObject({ acceptedAccounts: ['prod'], removedAccounts: ['dev'], rejectedAccounts: [] });
    expect((await getJson(`${base}/credentials`)).body).toEqual([expect.objectContaining({ name: 'prod' })]);
    expect((await manifest('dev', 'default', 'configMap a')).status).toBe(404);
    await a.batch([change('prod', 'ADDED', configMap('b', '2'))]);
    expect((await manifest('prod', 'default', 'configMap b')).status).toBe(200);
  });

  it('answers heartbeats and serves grpc.health.v1', async () => {
    const a = agent();
    await a.hello([account('dev')]);
    a.send({ heartbeat: { sentAtMs: Date.now() } });
    await a.next((m) => m.heartbeat !== undefined);

    const pkg = loadPackageDefinition(loadSync(healthProtoPath, { enums: String })) as unknown as {
      grpc: {
        health: {
          v1: {
            Health: new (
              addr: string,
              creds: ReturnType<typeof credentials.createInsecure>,
            ) => {
              check(req: { service: string }, cb: (e: ServiceError | null, r: { status: string }) => void): void;
              close(): void;
            };
          };
        };
      };
    };
    const health = new pkg.grpc.health.v1.Health(address, credentials.createInsecure());
    const check = (service: string) =>
      new Promise<string>((resolve, reject) =>
        health.check({ service }, (e, r) => (e ? reject(e) : resolve(r.status))),
      );
    expect(await check('')).toBe('SERVING');
    expect(await check('scaleagent.v1.AgentService')).toBe('SERVING');
    health.close();
  });

  it('serves gRPC server reflection for the agent protocol', async () => {
    const reflectionProto = createRequire(import.meta.url).resolve(
      '@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto',
    );
    const pkg = loadPackageDefinition(loadSync(reflectionProto)) as unknown as {
      grpc: {
        reflection: {
          v1: {
            ServerReflection: new (
              a: string,
              c: ReturnType<typeof credentials.createInsecure>,
            ) => {
              serverReflectionInfo(): ClientDuplexStream<
                object,
                { listServicesResponse?: { service: { name: string }[] } }
              >;
              close(): void;
            };
          };
        };
      };
    };
    const client = new pkg.grpc.reflection.v1.ServerReflection(address, credentials.createInsecure());
    const call = client.serverReflectionInfo();
    const response = new Promise<{ listServicesResponse?: { service: { name: string }[] } }>((resolve) =>
      call.on('data', resolve),
    );
    call.write({ listServices: '*' });
    const names = (await response).listServicesResponse?.service.map((s) => s.name) ?? [];
    expect(names).toEqual(expect.arrayContaining(['scaleagent.v1.AgentService', 'grpc.health.v1.Health']));
    call.end();
    client.close();
  });
});
