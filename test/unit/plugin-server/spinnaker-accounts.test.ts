import { describe, expect, it } from 'vitest';
import { isScaleAgentError } from '../../../src/shared/errors.js';
import { accountFilter, requireWritable } from '../../../src/plugin-server/auth/spinnaker-accounts.js';

describe('accountFilter (X-SPINNAKER-ACCOUNTS)', () => {
  it('without the header allows every account', () => {
    const f = accountFilter({ authorization: 'Bearer x', 'x-spinnaker-user': 'alice' });
    expect(f.restricted).toBe(false);
    expect(f.allows('anything')).toBe(true);
  });

  it('limits to the comma-separated accounts, trimmed, names compared exactly', () => {
    const f = accountFilter({ 'x-spinnaker-accounts': ' prod , dev,,staging ' });
    expect(f.restricted).toBe(true);
    expect(['prod', 'dev', 'staging'].map((a) => f.allows(a))).toEqual([true, true, true]);
    expect(f.allows('Prod')).toBe(false);
    expect(f.allows('prod2')).toBe(false);
    expect(f.allows('')).toBe(false);
  });

  it('matches the header name case-insensitively and joins repeated header lines', () => {
    expect(accountFilter({ 'X-Spinnaker-Accounts': 'a' }).allows('a')).toBe(true);
    const f = accountFilter({ 'x-spinnaker-accounts': ['a,b', 'c'] });
    expect(['a', 'b', 'c', 'd'].map((n) => f.allows(n))).toEqual([true, true, true, false]);
  });

  it('an empty header restricts to no account at all', () => {
    const f = accountFilter({ 'x-spinnaker-accounts': '' });
    expect(f.restricted).toBe(true);
    expect(f.allows('prod')).toBe(false);
  });

  it('requireWritable refuses accounts outside the header with SA_ERR_FORBIDDEN (403), naming them once', () => {
    const f = accountFilter({ 'x-spinnaker-accounts': 'a' });
    expect(() => requireWritable(f, ['a', 'a'])).not.toThrow();
    let caught: unknown;
    try {
      requireWritable(f, ['a', 'b', 'c', 'b']);
    } catch (e) {
      caught = e;
    }
    expect(isScaleAgentError(caught)).toBe(true);
    expect(caught).toMatchObject({ code: 'SA_ERR_FORBIDDEN', message: expect.stringContaining('accounts b, c:') });
    expect(() => requireWritable(accountFilter({}), ['b'])).not.toThrow();
  });
});
