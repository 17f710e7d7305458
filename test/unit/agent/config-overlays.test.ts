import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAgentConfig, parseAgentConfigs } from '../../../src/agent/config.js';
import { ScaleAgentError } from '../../../src/shared/errors.js';
import { loadPluginServerConfig } from '../../../src/plugin-server/config.js';
import { configFiles } from '../../../src/shared/yaml-config.js';

function errorOf(fn: () => unknown): ScaleAgentError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ScaleAgentError) return e;
    throw e;
  }
  throw new Error('expected an error');
}

const BASE = [
  'server:',
  '  address: clouddriver:9091',
  '  insecure: true',
  'kubernetes:',
  '  listPageSize: 200',
  '  accounts:',
  '    - name: prod',
  '      kubeconfigFile: kc/prod',
  '      namespaces: [web]',
  '    - name: dev',
  '      serviceAccount: true',
  '',
].join('\n');

describe('agent config overlays', () => {
  it('merges later files over earlier: mappings by key, accounts by name (replaced whole), new names appended', () => {
    const local = [
      'server:',
      '  heartbeatSeconds: 5',
      'kubernetes:',
      '  accounts:',
      '    - name: prod',
      '      kubeconfigFile: /secret/prod-v2',
      '    - name: staging',
      '      kubeconfigFile: kc/staging',
      '',
    ].join('\n');
    const c = parseAgentConfigs(
      [
        { file: '/opt/armory/config/armory-agent.yml', text: BASE },
        { file: '/opt/armory/local/armory-agent-local.yaml', text: local },
      ],
      {},
    );
    expect(c.server).toMatchObject({ address: 'clouddriver:9091', insecure: true, heartbeatSeconds: 5 });
    expect(c.kubernetes.listPageSize).toBe(200);
    expect(c.kubernetes.accounts.map((a) => a.name)).toEqual(['prod', 'dev', 'staging']);
    // Replaced whole: the base's namespaces do not leak into the overlay's prod.
    expect(c.kubernetes.accounts[0]).toMatchObject({ kubeconfigFile: '/secret/prod-v2', namespaces: [] });
    // Relative paths are relative to the file that gives them.
    expect(c.kubernetes.accounts[2]?.kubeconfigFile).toBe('/opt/armory/local/kc/staging');
  });

  it('an empty overlay changes nothing, and a scalar or list in an overlay replaces the earlier one', () => {
    const c = parseAgentConfigs(
      [
        { file: '/a.yaml', text: BASE },
        { file: '/b.yaml', text: '# nothing yet\n' },
        { file: '/c.yaml', text: 'kubernetes:\n  listPageSize: 50\n' },
      ],
      {},
    );
    expect(c.kubernetes.listPageSize).toBe(50);
    expect(c.kubernetes.accounts.map((a) => a.name)).toEqual(['prod', 'dev']);
  });

  it("names the file and line a schema error comes from, in the overlay's own numbering", () => {
    const local = [
      'kubernetes:',
      '  accounts:',
      '    - name: extra',
      '      kubeconfigFile: /k',
      '      colour: red',
      '',
    ];
    const e = errorOf(() =>
      parseAgentConfigs(
        [
          { file: '/etc/agent.yaml', text: BASE },
          { file: '/etc/agent-local.yaml', text: local.join('\n') },
        ],
        {},
      ),
    );
    expect(e.details).toContainEqual(
      expect.objectContaining({
        file: '/etc/agent-local.yaml',
        line: 5,
        path: '/kubernetes/accounts/0/colour',
        message: "unknown property 'colour'",
      }),
    );
    const bad = errorOf(() =>
      parseAgentConfigs(
        [
          { file: '/etc/agent.yaml', text: BASE.replace('listPageSize: 200', 'listPageSize: many') },
          { file: '/etc/agent-local.yaml', text: 'kubernetes: {accounts: [{name: extra, serviceAccount: true}]}\n' },
        ],
        {},
      ),
    );
    expect(bad.details).toContainEqual(
      expect.objectContaining({ file: '/etc/agent.yaml', line: 5, path: '/kubernetes/listPageSize' }),
    );
  });

  it("a directory is its config files in name order, *-local last (Armory's armory-agent-local.yaml)", () => {
    const dir = mkdtempSync(join(tmpdir(), 'overlay-dir-'));
    writeFileSync(join(dir, 'armory-agent.yml'), BASE);
    writeFileSync(
      join(dir, 'armory-agent-local.yaml'),
      'kubernetes:\n  accounts:\n    - name: dev\n      kubeconfigFile: /kc/dev\n',
    );
    writeFileSync(join(dir, 'README.txt'), 'not config');
    // A ConfigMap volume's bookkeeping entries are hidden and skipped.
    mkdirSync(join(dir, '..2026_11_27'));
    expect(configFiles([dir])).toEqual([join(dir, 'armory-agent.yml'), join(dir, 'armory-agent-local.yaml')]);
    const c = loadAgentConfig(configFiles([dir]), {});
    expect(c.kubernetes.accounts.find((a) => a.name === 'dev')).toMatchObject({ kubeconfigFile: '/kc/dev' });
    expect(c.kubernetes.accounts.find((a) => a.name === 'dev')?.serviceAccount).toBe(false);
    const empty = mkdtempSync(join(tmpdir(), 'overlay-empty-'));
    expect(() => configFiles([empty])).toThrow(/has no \.yaml, \.yml or \.json file/);
  });
});

describe('plugin-server config overlays', () => {
  it('merges files in order, artifact accounts by name, paths relative to the file that gives them', () => {
    const base = mkdtempSync(join(tmpdir(), 'ps-base-'));
    const site = mkdtempSync(join(tmpdir(), 'ps-site-'));
    writeFileSync(
      join(base, 'plugin-server.yaml'),
      [
        'http: {port: 7002}',
        'spinnaker:',
        '  artifacts:',
        '    http:',
        '      - {name: github, allowedHosts: [github.com], tokenFile: tokens/github}',
        '      - {name: nexus, allowedHosts: [nexus.example.com]}',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(site, 'site.yaml'),
      'http: {port: 8002}\nspinnaker: {artifacts: {http: [{name: github, allowedHosts: [ghe.example.com], tokenFile: ghe}]}}\n',
    );
    const c = loadPluginServerConfig([join(base, 'plugin-server.yaml'), join(site, 'site.yaml')]);
    expect(c.http.port).toBe(8002);
    expect(c.spinnaker?.artifacts?.http.map((h) => [h.name, h.allowedHosts, h.tokenFile])).toEqual([
      ['github', ['ghe.example.com'], join(site, 'ghe')],
      ['nexus', ['nexus.example.com'], undefined],
    ]);
  });
});

describe('secret references in the agent config', () => {
  it('keeps a reference as written (no path resolution) and checks its syntax where it is written', () => {
    const ref = 'encryptedFile:k8s!n:kubeconfigs!k:prod';
    const c = parseAgentConfigs(
      [{ file: '/etc/agent.yaml', text: `kubernetes: {accounts: [{name: a, kubeconfigFile: "${ref}"}]}\n` }],
      {},
    );
    expect(c.kubernetes.accounts[0]?.kubeconfigFile).toBe(ref);
    const text = [
      'kubernetes:',
      '  accounts:',
      '    - name: a',
      '      kubeconfigFile: "encrypted:k8s!n:kc!k:prod"',
      '',
    ];
    const e = errorOf(() => parseAgentConfigs([{ file: '/etc/agent.yaml', text: text.join('\n') }], {}));
    expect(e.details).toContainEqual(
      expect.objectContaining({ line: 4, message: 'a kubeconfig is a file: write encryptedFile:k8s!n:kc!k:prod' }),
    );
    const bad = errorOf(() =>
      parseAgentConfigs(
        [
          {
            file: '/etc/agent.yaml',
            text: text.join('\n').replace('"encrypted:k8s!n:kc!k:prod"', '"encryptedFile:k8s"'),
          },
        ],
        {},
      ),
    );
    expect(bad.details[0]?.message).toMatch(/secret reference encryptedFile:k8s is malformed/);
  });

  it('server.tokenFile may be a reference too, to a file', () => {
    const ok = parseAgentConfigs(
      [{ file: '/etc/a.yaml', text: 'server: {tokenFile: "encryptedFile:k8s!n:t!k:token"}\n' }],
      {},
    );
    expect(ok.server.tokenFile).toBe('encryptedFile:k8s!n:t!k:token');
    const e = errorOf(() =>
      parseAgentConfigs([{ file: '/etc/a.yaml', text: 'server: {tokenFile: "encrypted:k8s!n:t!k:token"}\n' }], {}),
    );
    expect(e.details).toContainEqual(
      expect.objectContaining({
        path: '/server/tokenFile',
        message: 'a token file is a file: write encryptedFile:k8s!n:t!k:token',
      }),
    );
  });

  it('vault with Kubernetes auth needs a role', () => {
    const e = errorOf(() =>
      parseAgentConfigs(
        [{ file: '/etc/agent.yaml', text: 'secrets: {vault: {url: "https://v:8200", authMethod: KUBERNETES}}\n' }],
        {},
      ),
    );
    expect(e.details).toContainEqual(
      expect.objectContaining({ path: '/secrets/vault', message: 'authMethod KUBERNETES needs role' }),
    );
  });
});
