/**
 * The Fiat client's decisions (src/plugin-server/auth/fiat.ts): when a cached view is asked for again, what a view
 * allows, which answers are views; and the client against a STAND-IN Fiat (test/infra/fiat-stand-in.ts, a real HTTP
 * server in Fiat's response shape) with the clock in the test's hands.
 */
import pino from 'pino';
import { Counter, Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FiatPermissions,
  mayRead,
  needsFetch,
  parseFiatView,
  type CachedView,
} from '../../../src/plugin-server/auth/fiat.js';
import { FiatStandIn } from '../../infra/fiat-stand-in.js';

const view = (accounts: Record<string, string[]>, admin = false) =>
  parseFiatView({
    admin,
    accounts: Object.entries(accounts).map(([name, authorizations]) => ({ name, authorizations })),
  })!;

describe('Fiat view decisions', () => {
  const entry = (accounts: Record<string, string[]>, fetchedAtMs: number, admin = false): CachedView => ({
    view: view(accounts, admin),
    fetchedAtMs,
  });

  it('fetches when there is no view, when it is past its time, and on a miss at most once per missRefresh', () => {
    const e = entry({ a: ['READ'] }, 1000);
    expect(needsFetch(undefined, [], 1000, 20_000, 2000)).toBe(true);
    expect(needsFetch(e, ['a'], 1000 + 19_999, 20_000, 2000)).toBe(false);
    expect(needsFetch(e, ['a'], 1000 + 20_000, 20_000, 2000)).toBe(true);
    // "b" is not named: a miss, refreshed once the view is missRefresh old, not before.
    expect(needsFetch(e, ['a', 'b'], 1000 + 1999, 20_000, 2000)).toBe(false);
    expect(needsFetch(e, ['a', 'b'], 1000 + 2000, 20_000, 2000)).toBe(true);
    // Named without READ is an answer, not a miss; names compare ignoring case, as Fiat's client compares them.
    expect(needsFetch(entry({ a: ['READ'], b: [] }, 1000), ['a', 'B'], 10_000, 20_000, 2000)).toBe(false);
    // An admin may read everything: nothing to refresh for.
    expect(needsFetch(entry({}, 1000, true), ['a', 'b'], 10_000, 20_000, 2000)).toBe(false);
  });

  it('allows READ on a named account (any case), everything to an admin, nothing else', () => {
    const v = view({ Prod: ['READ', 'WRITE'], staging: ['WRITE'], dev: ['read'] });
    expect(mayRead(v, 'prod')).toBe(true);
    expect(mayRead(v, 'PROD')).toBe(true);
    expect(mayRead(v, 'staging')).toBe(false);
    expect(mayRead(v, 'dev')).toBe(true);
    expect(mayRead(v, 'other')).toBe(false);
    expect(mayRead(view({}, true), 'other')).toBe(true);
  });

  it("reads Fiat's UserPermission.View leniently and refuses what is not one", () => {
    const v = parseFiatView({
      name: 'alice',
      accounts: [{ name: 'a', authorizations: ['READ'] }, { name: 'b' }, { authorizations: ['READ'] }, null],
      applications: [{ name: 'app', authorizations: ['READ'] }],
      admin: false,
      allowAccessToUnknownApplications: true,
    });
    expect(v).toBeDefined();
    expect([...v!.accounts.keys()]).toEqual(['a', 'b']);
    expect(parseFiatView({ name: 'alice' })).toEqual({ admin: false, accounts: new Map() });
    expect(parseFiatView('<html>')).toBeUndefined();
    expect(parseFiatView([])).toBeUndefined();
    expect(parseFiatView({ accounts: { a: ['READ'] } })).toBeUndefined();
  });
});

describe('FiatPermissions against a stand-in Fiat', () => {
  const fiat = new FiatStandIn();
  const registry = new Registry();
  const errors = new Counter({ name: 'fiat_errors', help: 'x', labelNames: ['reason'], registers: [registry] });
  let now = 1_000_000;
  let client: FiatPermissions;

  beforeAll(async () => {
    await fiat.start();
    client = new FiatPermissions(
      { baseUrl: `${fiat.baseUrl}/`, cacheSeconds: 20, missRefreshSeconds: 2, timeoutMs: 1000 },
      { errors, log: pino({ level: 'silent' }), now: () => now },
    );
  });
  afterAll(async () => {
    await client.close();
    await fiat.stop();
  });

  it('keeps a view for cacheSeconds: a right taken away shows once the view is past its time', async () => {
    fiat.users.set('alice', { accounts: { a: ['READ'] } });
    expect(mayRead(await client.viewOf('alice', ['a']), 'a')).toBe(true);
    fiat.users.set('alice', { accounts: { a: [] } });
    now += 19_000;
    expect(mayRead(await client.viewOf('alice', ['a']), 'a')).toBe(true);
    expect(fiat.lookupsOf('alice')).toBe(1);
    now += 1000;
    expect(mayRead(await client.viewOf('alice', ['a']), 'a')).toBe(false);
    expect(fiat.lookupsOf('alice')).toBe(2);
  });

  it('asks Fiat once for requests arriving together', async () => {
    fiat.users.set('bob', { accounts: { a: ['READ'] } });
    const views = await Promise.all(Array.from({ length: 10 }, () => client.viewOf('bob', ['a'])));
    expect(views.every((v) => mayRead(v, 'a'))).toBe(true);
    expect(fiat.lookupsOf('bob')).toBe(1);
  });

  it('a failed refresh on a miss keeps the view within its time; past it, the failure is an error', async () => {
    fiat.users.set('carol', { accounts: { a: ['READ'] } });
    await client.viewOf('carol', ['a']);
    fiat.failWith = 502;
    try {
      now += 5000;
      expect(mayRead(await client.viewOf('carol', ['a', 'new']), 'a')).toBe(true);
      expect(fiat.lookupsOf('carol')).toBe(2);
      now += 20_000;
      await expect(client.viewOf('carol', ['a'])).rejects.toMatchObject({
        code: 'SA_ERR_UNAVAILABLE',
        message: expect.stringMatching(/did not answer for user carol: it answered 502/),
      });
    } finally {
      fiat.failWith = undefined;
    }
    expect((await registry.getSingleMetric('fiat_errors')!.get()).values).toContainEqual(
      expect.objectContaining({ labels: { reason: 'status' } }),
    );
  });

  it('a user id with characters of its own reaches Fiat as one path segment', async () => {
    fiat.users.set('dave@example.com/x y', { accounts: { a: ['READ'] } });
    expect(mayRead(await client.viewOf('dave@example.com/x y', []), 'a')).toBe(true);
  });
});
