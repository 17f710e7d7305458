import { describe, expect, it } from 'vitest';
import { fromClouddriverAccount, namePattern } from '../../../src/shared/clouddriver-accounts.js';
import { ScaleAgentError } from '../../../src/shared/errors.js';

describe('fromClouddriverAccount', () => {
  it("reads the keys dynamic accounts have, READ/WRITE of Fiat's map, and lists the rest as ignored", () => {
    const r = fromClouddriverAccount(
      {
        name: 'prod-eu',
        type: 'kubernetes',
        providerVersion: 'V2',
        kubeconfigFile: '/kube/prod-eu',
        context: 'eu',
        namespaces: ['web'],
        kinds: ['deployment'],
        onlySpinnakerManaged: true,
        permissions: { read: ['dev'], WRITE: ['ops'], EXECUTE: ['ci'] },
        cachingPolicies: [],
        dockerRegistries: [{ accountName: 'hub' }],
        omitKinds: null,
      },
      'clouddriver.yml:3 kubernetes.accounts[0]',
    );
    expect(r.definition).toEqual({
      name: 'prod-eu',
      kubeconfigFile: '/kube/prod-eu',
      context: 'eu',
      namespaces: ['web'],
      kinds: ['deployment'],
      onlySpinnakerManaged: true,
      permissions: { READ: ['dev'], WRITE: ['ops'] },
    });
    expect(r.ignored).toEqual(['cachingPolicies', 'dockerRegistries']);
  });

  it('names where and which key is wrong', () => {
    const where = 'clouddriver.yml:9 kubernetes.accounts[1]';
    const message = (raw: unknown) => {
      try {
        fromClouddriverAccount(raw, where);
      } catch (e) {
        expect(e).toBeInstanceOf(ScaleAgentError);
        return (e as ScaleAgentError).message;
      }
      return 'accepted';
    };
    expect(message('x')).toBe(`${where}: must be an object`);
    expect(message({ namespaces: [] })).toBe(`${where}.name: must be a non-empty string`);
    expect(message({ name: 'a', namespaces: 'web' })).toBe(`${where}.namespaces: must be a list of strings`);
    expect(message({ name: 'a', serviceAccount: 'yes' })).toBe(`${where}.serviceAccount: must be true or false`);
    expect(message({ name: 'a', permissions: { READ: 'dev' } })).toBe(
      `${where}.permissions: READ must be a list of role names`,
    );
    expect(message({ name: 'a', state: 'ON' })).toBe(`${where}.state: must be ACTIVE or INACTIVE`);
  });
});

describe('namePattern', () => {
  it('matches the whole name', () => {
    const p = namePattern('prod-.*|eu');
    expect(['prod-a', 'eu'].map((n) => p.test(n))).toEqual([true, true]);
    expect(['x-prod-a', 'europe'].map((n) => p.test(n))).toEqual([false, false]);
  });
});
