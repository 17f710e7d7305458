import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffAccounts, loadAgentConfig, parseAgentConfig } from '../../../src/agent/config.js';
import { ScaleAgentError } from '../../../src/shared/errors.js';
import { agentAccount } from '../../infra/records.js';
import { thrown } from '../../infra/assertions.js';

const errorOf = (fn: () => unknown): ScaleAgentError => thrown(ScaleAgentError, fn);

describe('agent config', () => {
  it('fills in the documented defaults', () => {
    const c = parseAgentConfig(
      '/etc/agent.yaml',
      'kubernetes:\n  accounts:\n    - name: dev\n      serviceAccount: true\n',
      {
        POD_NAME: 'agent-0',
      },
    );
    expect(c.server).toMatchObject({ address: '127.0.0.1:9091', insecure: false, heartbeatSeconds: 20 });
    expect(c.server.backoff).toEqual({ baseDelaySeconds: 1, multiplier: 1.6, jitter: 0.2, maxDelaySeconds: 120 });
    expect(c.admin).toEqual({ host: '127.0.0.1', port: 8082 });
    // No health listener unless a port is given (the kubelet's probes need one: synth and the chart set it); no metrics there.
    expect(c.health).toEqual({ host: '0.0.0.0', metrics: false });
    expect(c.agentId).toBe('agent-0');
    expect(c.queue.maxBytes).toBe(16 * 1024 * 1024);
    // Every default of an account (agentAccount's are the schema's), the Clouddriver options too.
    expect(c.kubernetes.accounts[0]).toMatchObject(agentAccount({ name: 'dev', serviceAccount: true }));
  });

  it('an empty file is a valid config with no accounts', () => {
    const c = parseAgentConfig('/etc/agent.yaml', '', {});
    expect(c.kubernetes.accounts).toEqual([]);
    expect(c.agentId.length).toBeGreaterThan(0);
  });

  it('resolves relative paths against the config file', () => {
    const c = parseAgentConfig(
      '/etc/sa/agent.yaml',
      'server: {tls: {caFile: ca.pem}}\nkubernetes: {accounts: [{name: a, kubeconfigFile: kc/a}]}\n',
      {},
    );
    expect(c.server.tls?.caFile).toBe('/etc/sa/ca.pem');
    expect(c.kubernetes.accounts[0]?.kubeconfigFile).toBe('/etc/sa/kc/a');
  });

  it('names file, line and JSON path of a schema error', () => {
    const text = [
      'server:',
      '  address: 127.0.0.1:9091',
      'kubernetes:',
      '  accounts:',
      '    - name: dev',
      '      kubeconfigFile: /k',
      '      kinds: [apps/v1/Deployment]',
      '      colour: red',
      '',
    ].join('\n');
    const e = errorOf(() => parseAgentConfig('/etc/agent.yaml', text, {}));
    expect(e.code).toBe('SA_ERR_INVALID_INPUT');
    const kinds = e.details.find((d) => d.path === '/kubernetes/accounts/0/kinds/0');
    expect(kinds).toMatchObject({ file: '/etc/agent.yaml', line: 7 });
    const extra = e.details.find((d) => d.path === '/kubernetes/accounts/0/colour');
    expect(extra).toMatchObject({ line: 8, message: "unknown property 'colour'" });
  });

  it('rejects contradictions with located messages', () => {
    const text = [
      'kubernetes:',
      '  accounts:',
      '    - {name: a, kubeconfigFile: /k, serviceAccount: true}',
      '    - {name: a, kubeconfigFile: /k, kinds: [Pod], omitKinds: [Secret]}',
      '    - {name: b}',
      '    - {name: c, serviceAccount: true, namespaces: [x], omitNamespaces: [y]}',
    ].join('\n');
    const e = errorOf(() => parseAgentConfig('/etc/agent.yaml', text, {}));
    const messages = e.details.map((d) => `${d.path} ${d.message}`);
    expect(messages).toEqual(
      expect.arrayContaining([
        '/kubernetes/accounts/0/serviceAccount give either kubeconfigFile or serviceAccount: true, not both',
        "/kubernetes/accounts/1/name duplicate account name 'a' (first at index 0)",
        '/kubernetes/accounts/1/omitKinds kinds and omitKinds are exclusive',
        '/kubernetes/accounts/2 needs kubeconfigFile or serviceAccount: true',
        '/kubernetes/accounts/3/omitNamespaces namespaces and omitNamespaces are exclusive',
      ]),
    );
    expect(e.details.find((d) => d.path === '/kubernetes/accounts/2')?.line).toBe(5);
  });

  it('reports YAML syntax errors with their line, and refuses alias bombs', () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-config-'));
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'server:\n  address: [unclosed\n');
    const e = errorOf(() => loadAgentConfig(bad, {}));
    expect(e.code).toBe('SA_ERR_INVALID_INPUT');
    expect(e.details[0]?.file).toBe(bad);
    expect(e.details[0]?.line).toBeGreaterThan(0);

    const lines = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 0; i < 8; i++)
      lines.push(
        `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(97 + i)}`)
          .join(', ')}]`,
      );
    const bomb = join(dir, 'bomb.yaml');
    writeFileSync(bomb, lines.join('\n'));
    expect(errorOf(() => loadAgentConfig(bomb, {})).code).toBe('SA_ERR_INPUT_TOO_LARGE');

    expect(errorOf(() => loadAgentConfig(join(dir, 'missing.yaml'), {})).code).toBe('SA_ERR_FILE_UNREADABLE');
  });

  it('diffs accounts by content, whatever the key order', () => {
    const a = parseAgentConfig(
      '/c.yaml',
      'kubernetes: {accounts: [{name: a, serviceAccount: true}, {name: b, kubeconfigFile: /b}, {name: c, kubeconfigFile: /c}]}',
      {},
    );
    const b = parseAgentConfig(
      '/c.yaml',
      'kubernetes: {accounts: [{serviceAccount: true, name: a}, {name: b, kubeconfigFile: /b2}, {name: d, kubeconfigFile: /d}]}',
      {},
    );
    const diff = diffAccounts(a.kubernetes.accounts, b.kubernetes.accounts);
    expect(diff.unchanged.map((x) => x.name)).toEqual(['a']);
    expect(diff.changed.map((x) => x.name)).toEqual(['b']);
    expect(diff.added.map((x) => x.name)).toEqual(['d']);
    expect(diff.removed.map((x) => x.name)).toEqual(['c']);
  });
});
