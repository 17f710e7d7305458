import { describe, expect, it } from 'vitest';
import { parsePluginServerConfig, resolveStorageUrl } from '../../../src/plugin-server/config.js';
import { ScaleAgentError } from '../../../src/shared/errors.js';

function error(yaml: string): ScaleAgentError {
  try {
    parsePluginServerConfig(yaml, 'ps.yaml');
  } catch (e) {
    return e as ScaleAgentError;
  }
  throw new Error('expected a configuration error');
}

describe('plugin-server config', () => {
  it('fills documented defaults: memory store, 9091/7002, 600 s grace period', () => {
    const c = parsePluginServerConfig('{}');
    expect(c).toMatchObject({
      grpc: { host: '0.0.0.0', port: 9091 },
      http: { host: '0.0.0.0', port: 7002 },
      storage: { type: 'memory' },
      accounts: { gracePeriodSeconds: 600 },
      limits: { maxMessageBytes: 16 * 1024 * 1024, maxUnackedBytes: 8 * 1024 * 1024 },
    });
    expect(c.grpc.tls).toBeUndefined();
  });

  it('takes the MySQL URL from exactly one of url, urlFile, env', () => {
    const c = parsePluginServerConfig('storage: {type: mysql, env: DB_URL}');
    expect(c.storage).toEqual({ type: 'mysql', env: 'DB_URL', connectionLimit: 8 });
    process.env.DB_URL = 'mysql://u@h:3306/d';
    expect(resolveStorageUrl(c.storage as Extract<typeof c.storage, { type: 'mysql' }>)).toBe('mysql://u@h:3306/d');
    expect(error('storage: {type: mysql}').details[0]).toMatchObject({ path: '/storage', line: 1 });
    expect(error('storage: {type: mysql, url: "mysql://a@b/c", env: X}').details[0]!.message).toMatch(/exactly one/);
  });

  it('takes a PostgreSQL URL the same way, and refuses a URL of the other store', () => {
    const c = parsePluginServerConfig('storage: {type: postgres, env: PG_URL, connectionLimit: 3}');
    expect(c.storage).toEqual({ type: 'postgres', env: 'PG_URL', connectionLimit: 3 });
    process.env.PG_URL = 'postgres://u@h:5432/d';
    expect(resolveStorageUrl(c.storage as Extract<typeof c.storage, { type: 'postgres' }>)).toBe(
      'postgres://u@h:5432/d',
    );
    expect(parsePluginServerConfig('storage: {type: postgres, url: "postgresql://u@h/d"}').storage).toEqual({
      type: 'postgres',
      url: 'postgresql://u@h/d',
      connectionLimit: 8,
    });
    const e = error('storage:\n  type: postgres\n  url: "mysql://u@h/d"\n');
    expect(e.details.map((d) => d.path)).toContain('/storage/url');
    expect(error('storage: {type: postgres}').details[0]!.message).toMatch(/postgres storage needs exactly one of/);
  });

  it('accounts.management.pattern must be a regular expression; unset by default', () => {
    expect(parsePluginServerConfig('{}').accounts.management).toEqual({});
    expect(parsePluginServerConfig('accounts: {management: {pattern: "prod-.*"}}').accounts.management).toEqual({
      pattern: 'prod-.*',
    });
    const e = error('accounts:\n  management:\n    pattern: "prod-(.*"\n');
    expect(e.details[0]).toMatchObject({ path: '/accounts/management/pattern', line: 3 });
    expect(e.details[0]!.message).toMatch(/not a regular expression/);
  });

  it('storage.url and storage.urlFile take secret references of their form, checked at their line', () => {
    const ok = parsePluginServerConfig(
      'storage: {type: mysql, urlFile: "encryptedFile:vault!e:kv!p:db!k:url"}\n' +
        'secrets: {vault: {url: "http://vault:8200", authMethod: TOKEN}}',
      '/etc/ps/ps.yaml',
    );
    // A reference is no path: not made relative to the config file's directory.
    expect(ok.storage).toMatchObject({ urlFile: 'encryptedFile:vault!e:kv!p:db!k:url' });
    const wrongForm = error('storage:\n  type: mysql\n  url: "encryptedFile:vault!e:kv!p:db!k:url"\n');
    expect(wrongForm.details[0]?.message).toContain('storage.url is a value, not a file: write encrypted:vault!');
    expect(wrongForm.details[0]?.line).toBe(3);
    const malformed = error('storage: {type: mysql, url: "encrypted:vault"}');
    expect(malformed.details[0]?.message).toContain('is malformed');
    expect(error('secrets: {vault: {url: "http://v", authMethod: KUBERNETES}}').details[0]?.message).toBe(
      'authMethod KUBERNETES needs role',
    );
  });

  it('dynamicAccounts.scan is off by default; its patterns must compile and it needs a Clouddriver to read', () => {
    expect(parsePluginServerConfig('{}').dynamicAccounts.scan).toEqual({
      namePatterns: [],
      frequencySeconds: 120,
      batchSize: 500,
      dryRun: false,
      state: 'ACTIVE',
      timeoutSeconds: 30,
    });
    const bad = error('dynamicAccounts:\n  scan:\n    clouddriverUrl: http://cd:7002\n    namePatterns: [ok, "(x"]\n');
    expect(bad.details[0]).toMatchObject({ path: '/dynamicAccounts/scan/namePatterns/1', line: 4 });
    expect(bad.details[0]!.message).toMatch(/not a regular expression/);
    const noSource = error('dynamicAccounts:\n  scan:\n    namePatterns: [prod-.*]\n');
    expect(noSource.details[0]).toMatchObject({ path: '/dynamicAccounts/scan', line: 3 });
    expect(noSource.details[0]!.message).toMatch(/set clouddriverUrl, or spinnaker.upstream/);
    const front = 'spinnaker: {upstream: {baseUrl: "http://cd:7002"}}\ndynamicAccounts: {scan: {namePatterns: [p-.*]}}';
    expect(parsePluginServerConfig(front).dynamicAccounts.scan.namePatterns).toEqual(['p-.*']);
  });

  it('names file, line and JSON path of schema errors', () => {
    const e = error('grpc:\n  port: 70000\nhttp:\n  bogus: 1\n');
    expect(e.code).toBe('SA_ERR_INVALID_INPUT');
    expect(e.details).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ file: 'ps.yaml', line: 2, path: '/grpc/port' }),
        expect.objectContaining({ file: 'ps.yaml', line: 4, path: '/http/bogus', message: "unknown property 'bogus'" }),
      ]),
    );
  });

  it('requires a client CA when client certificates are required', () => {
    expect(error('grpc: {tls: {certFile: c.pem, keyFile: k.pem}}').details[0]!.message).toMatch(/clientCaFile/);
    const c = parsePluginServerConfig('grpc: {tls: {certFile: c.pem, keyFile: k.pem, requireClientCert: false}}');
    expect(c.grpc.tls).toMatchObject({ requireClientCert: false });
  });
});
