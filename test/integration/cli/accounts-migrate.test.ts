/**
 * `scale-agent accounts migrate` as a user runs it (the built CLI) against a real plugin-server process: from a
 * Clouddriver-style YAML file and from a Clouddriver `/credentials?expand=true` (a second real plugin-server, whose
 * agent serves accounts from its own config, answers it in Clouddriver's shape). Checks the target's dynamic account
 * list after each run: a dry run changes nothing, a second run changes nothing, refused items are named, and bad
 * input, a refused token and an unreachable server give their exit codes.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MigrationSummary } from '../../../src/cli/accounts/migrate.js';
import { createNamespace, freePort, run, testEnv } from '../../infra/index.js';
import { AgentProcess, PluginServerProcess } from '../../infra/processes.js';

const bin = fileURLToPath(new URL('../../../bin/run.js', import.meta.url));
const cli = (args: string[]) => run(process.execPath, [bin, 'accounts', 'migrate', ...args], { allowFail: true });

const dir = mkdtempSync(join(tmpdir(), 'sa-migrate-'));
const token = randomBytes(24).toString('hex');
let target: PluginServerProcess;
let source: PluginServerProcess;
let agent: AgentProcess;
let ns: string;

const accountsFile = join(dir, 'clouddriver.yml');
const yaml = (prodANamespaces: string) => `# clouddriver-local.yml
kubernetes:
  enabled: true
  accounts:
    - name: prod-a
      kubeconfigFile: /kube/prod-a
      namespaces: ${prodANamespaces}
      permissions:
        READ: [dev]
        WRITE: [ops]
    - name: prod-b
      kubeconfigFile: /kube/prod-b
      namespaces: [a]
      omitNamespaces: [b]
    - name: prod-c
      serviceAccount: true
      cachingPolicies: []
    - name: prod-d
      namespaces: [web]
    - name: dev-x
      kubeconfigFile: /kube/dev-x
`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = any;

async function get(path: string): Promise<Body> {
  const res = await fetch(target.httpBase + path, { headers: { authorization: `Bearer ${token}` } });
  return res.json();
}

const dynamicAccounts = async (): Promise<{ name: string; state: string }[]> =>
  ((await get('/armory/accounts?limit=1000')).items as { name: string; state: string; dynamic?: boolean }[])
    .filter((a) => a.dynamic)
    .map((a) => ({ name: a.name, state: a.state }));

const common = () => ['--url', target.httpBase, '--token', token];

beforeAll(async () => {
  ns = await createNamespace('migrate-src');
  const tokensFile = join(dir, 'tokens');
  writeFileSync(tokensFile, `${token} migrator admin\n`, { mode: 0o600 });
  target = await PluginServerProcess.start({ dir, name: 'target', extra: { http: { auth: { tokensFile } } } });
  source = await PluginServerProcess.start({ dir, name: 'clouddriver' });
  agent = await AgentProcess.start({
    dir,
    agentId: 'source-agent',
    serverAddress: source.grpcAddress,
    accounts: [
      {
        name: 'src-one',
        kubeconfigFile: testEnv().kubeconfig,
        namespaces: [ns],
        kinds: ['ConfigMap'],
        permissions: { READ: ['viewers'], WRITE: ['deployers'] },
      },
    ],
  });
  writeFileSync(accountsFile, yaml('[web]'));
}, 120_000);

afterAll(async () => {
  await agent?.stop();
  await source?.stop();
  await target?.stop();
});

describe('scale-agent accounts migrate', () => {
  it('--dry-run --json says what would happen, names what is refused (exit 1), and changes nothing', async () => {
    const r = await cli(['--file', accountsFile, '--pattern', 'prod-.*', '--dry-run', '--json', ...common()]);
    expect(r.code, r.stderr).toBe(1);
    const s = JSON.parse(r.stdout) as MigrationSummary;
    expect(s.dryRun).toBe(true);
    expect(s.counts).toEqual({ create: 2, update: 0, unchanged: 0, skip: 1, refuse: 2 });
    const by = Object.fromEntries(s.accounts.map((a) => [a.name, a]));
    expect(by['prod-a']).toMatchObject({ action: 'create' });
    expect(by['prod-c']).toMatchObject({ action: 'create', ignored: ['cachingPolicies'] });
    expect(by['dev-x']).toMatchObject({ action: 'skip', reason: 'name does not match --pattern' });
    // Refused by the plugin-server (exclusive keys) and here (no kubeconfig source), each with where and why.
    expect(by['prod-b']!.reason).toMatch(/omitNamespaces: namespaces and omitNamespaces are exclusive/);
    expect(by['prod-d']!.reason).toBe(
      `${accountsFile}:18 kubernetes.accounts[3]: no kubeconfigFile, kubeconfigContents or serviceAccount; give --kubeconfig-file`,
    );
    expect(await dynamicAccounts()).toEqual([]);
  });

  it('creates the accounts INACTIVE, prints one line per account, and exits 1 for the refused ones', async () => {
    const r = await cli(['--file', accountsFile, '--pattern', 'prod-.*', ...common()]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^created +prod-a$/m);
    expect(r.stdout).toMatch(/^created +prod-c +ignored keys: cachingPolicies$/m);
    expect(r.stdout).toMatch(/^refused +prod-b +item \d .*exclusive/m);
    expect(r.stdout).toMatch(/^2 created, 0 updated, 0 unchanged, 1 skipped, 2 refused/m);
    expect(await dynamicAccounts()).toEqual([
      { name: 'prod-a', state: 'INACTIVE' },
      { name: 'prod-c', state: 'INACTIVE' },
    ]);
    expect(await get('/armory/accounts/prod-a')).toMatchObject({
      kubeconfigFile: '/kube/prod-a',
      namespaces: ['web'],
      permissions: { READ: ['dev'], WRITE: ['ops'] },
    });
  });

  it('running it again changes nothing (exit 0 when nothing is refused); a changed definition is updated', async () => {
    const before = await get('/armory/accounts/prod-a');
    const again = await cli(['--file', accountsFile, '--pattern', 'prod-(a|c)', '--json', ...common()]);
    expect(again.code, again.stderr).toBe(0);
    expect((JSON.parse(again.stdout) as MigrationSummary).counts).toEqual({
      create: 0,
      update: 0,
      unchanged: 2,
      skip: 3,
      refuse: 0,
    });
    expect((await get('/armory/accounts/prod-a')).lastUpdated).toBe(before.lastUpdated);

    writeFileSync(accountsFile, yaml('[web, api]'));
    const dry = await cli(['--file', accountsFile, '--pattern', 'prod-a', '--dry-run', ...common()]);
    expect(dry.stdout).toMatch(/^would update +prod-a$/m);
    expect((await get('/armory/accounts/prod-a')).namespaces).toEqual(['web']);
    const real = await cli(['--file', accountsFile, '--pattern', 'prod-a', ...common()]);
    expect(real.code, real.stderr).toBe(0);
    expect(real.stdout).toMatch(/^updated +prod-a$/m);
    expect(await get('/armory/accounts/prod-a')).toMatchObject({ namespaces: ['web', 'api'], state: 'INACTIVE' });
  });

  it("reads a Clouddriver's /credentials?expand=true, with --kubeconfig-file for what it does not show", async () => {
    const r = await cli([
      '--clouddriver-url',
      source.httpBase,
      '--kubeconfig-file',
      '/kubeconfigs/{name}.yaml',
      '--zone',
      'zone-eu',
      '--json',
      ...common(),
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as MigrationSummary).accounts).toEqual([
      expect.objectContaining({ name: 'src-one', action: 'create' }),
    ]);
    expect(await get('/armory/accounts/src-one')).toMatchObject({
      kubeconfigFile: '/kubeconfigs/src-one.yaml',
      zoneId: 'zone-eu',
      namespaces: [ns],
      kinds: ['ConfigMap'],
      permissions: { READ: ['viewers'], WRITE: ['deployers'] },
      state: 'INACTIVE',
    });
  });

  it("reads Halyard's config (deploymentConfigurations[].providers.kubernetes.accounts)", async () => {
    const hal = join(dir, 'halconfig.yml');
    writeFileSync(
      hal,
      [
        'currentDeployment: default',
        'deploymentConfigurations:',
        '  - name: default',
        '    providers:',
        '      kubernetes:',
        '        enabled: true',
        '        accounts:',
        '          - name: hal-one',
        '            providerVersion: V2',
        '            kubeconfigFile: /kube/hal-one',
        '            omitNamespaces: [kube-system]',
        '',
      ].join('\n'),
    );
    const r = await cli(['--file', hal, '--dry-run', '--json', ...common()]);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as MigrationSummary).accounts).toEqual([
      {
        name: 'hal-one',
        action: 'create',
        where: `${hal}:8 deploymentConfigurations[0].providers.kubernetes.accounts[0]`,
      },
    ]);
    expect((await get('/armory/accounts/hal-one')).code).toBe('SA_ERR_NOT_FOUND');
  });

  it('sends more accounts than one request may carry in several requests', async () => {
    const many = join(dir, 'many.yml');
    const names = Array.from({ length: 1200 }, (_, i) => `bulk-${String(i).padStart(4, '0')}`);
    writeFileSync(
      many,
      `kubernetes:\n  accounts:\n${names.map((n) => `    - {name: ${n}, kubeconfigFile: /kube/${n}}\n`).join('')}`,
    );
    const r = await cli(['--file', many, '--dry-run', '--json', ...common()]);
    expect(r.code, r.stderr).toBe(0);
    const s = JSON.parse(r.stdout) as MigrationSummary;
    expect(s.counts).toEqual({ create: 1200, update: 0, unchanged: 0, skip: 0, refuse: 0 });
    expect(s.accounts.map((a) => a.name)).toEqual(names);
    expect((await dynamicAccounts()).filter((a) => a.name.startsWith('bulk-'))).toEqual([]);
  });

  it('bad input exits 2 and names the file and line; nothing changes', async () => {
    const before = await dynamicAccounts();
    const broken = join(dir, 'broken.yml');
    writeFileSync(broken, 'kubernetes:\n  accounts:\n    - name: x\n      namespaces: [a, b\n');
    const parse = await cli(['--file', broken, ...common()]);
    expect(parse.code).toBe(2);
    expect(parse.stderr).toContain(`${broken} is not valid YAML`);
    expect(parse.stderr).toMatch(new RegExp(`${broken}:\\d+:\\d+ `));

    const shape = join(dir, 'shape.yml');
    writeFileSync(shape, 'kubernetes:\n  enabled: true\n  accounts:\n    name: x\n');
    const notList = await cli(['--file', shape, ...common()]);
    expect(notList.code).toBe(2);
    expect(notList.stderr).toContain(`${shape}:3: kubernetes.accounts must be a list of accounts`);

    const pattern = await cli(['--file', accountsFile, '--pattern', 'prod-(', ...common()]);
    expect(pattern.code).toBe(2);
    expect(pattern.stderr).toContain('--pattern: not a regular expression');

    const missing = await cli(['--file', join(dir, 'nope.yml'), ...common()]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`cannot read ${join(dir, 'nope.yml')}`);

    const both = await cli(['--file', accountsFile, '--clouddriver-url', source.httpBase, ...common()]);
    expect(both.code).toBe(2);

    const noToken = await cli(['--file', accountsFile, '--url', target.httpBase]);
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('pass an admin token with --token');
    expect(await dynamicAccounts()).toEqual(before);
  });

  it('exits 3 when the plugin-server or Clouddriver cannot be reached', async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const server = await cli(['--file', accountsFile, '--url', nowhere, '--token', token]);
    expect(server.code).toBe(3);
    expect(server.stderr).toContain(`cannot reach the plugin-server at ${nowhere}`);
    const clouddriver = await cli(['--clouddriver-url', nowhere, ...common()]);
    expect(clouddriver.code).toBe(3);
    expect(clouddriver.stderr).toContain(`cannot reach Clouddriver at ${nowhere}/credentials?expand=true`);
  });
});
