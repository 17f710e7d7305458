import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../infra/index.js';

// `validate` and `check` as a CI job runs them: real processes from the build, exit codes and --json.
const bin = fileURLToPath(new URL('../../../bin/run.js', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));
const cli = (args: string[]) => run(process.execPath, [bin, ...args], { allowFail: true });

/** Every rule this topology breaks is known from how it is written, not from what check printed. */
const RISKY = `apiVersion: scale-agent.io/v1alpha1
kind: Topology
metadata: { name: risky }
pluginServer:
  namespace: spinnaker
  grpc:
    exposure: { type: LoadBalancer, provider: generic, internal: false, address: grpc.example.com }
  tls: { mode: insecure }
agents:
  - name: remote
    mode: infrastructure
    accounts:
      - name: wide
        kubeconfigSecret: { name: kubeconfigs, key: wide }
        rbac:
          extraRules:
            - { apiGroups: ['*'], resources: ['*'], verbs: ['*'] }
`;
const lineOf = (text: string, needle: string): number => text.split('\n').findIndex((l) => l.includes(needle)) + 1;

interface Violation {
  rule: string;
  severity: string;
  file: string;
  line: number;
  path: string;
}

let risky: string;
beforeAll(() => {
  risky = join(mkdtempSync(join(tmpdir(), 'cli-check-')), 'risky.yaml');
  writeFileSync(risky, RISKY);
});

describe('scale-agent check', () => {
  it('--json reports each broken rule with its id, severity and location; errors make the exit code 1', async () => {
    const r = await cli(['check', risky, '--json']);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as { ok: boolean; errors: number; warnings: number; violations: Violation[] };
    expect(report.ok).toBe(false);
    const byRule = new Map(report.violations.map((v) => [v.rule, v]));
    expect([...byRule.keys()].sort()).toEqual(['SA001', 'SA003', 'SA004', 'SA005', 'SA006', 'SA008', 'SA009']);
    expect(report.errors).toBe(3);
    expect(report.warnings).toBe(4);
    expect(byRule.get('SA001')).toMatchObject({
      severity: 'error',
      file: risky,
      path: '/agents/0',
      line: lineOf(RISKY, '- name: remote'),
    });
    expect(byRule.get('SA003')).toMatchObject({
      severity: 'error',
      path: '/agents/0/accounts/0/rbac/extraRules/0',
      line: lineOf(RISKY, "apiGroups: ['*']"),
    });
    expect(byRule.get('SA004')).toMatchObject({ severity: 'error', line: lineOf(RISKY, '- name: wide') });
    expect(byRule.get('SA006')).toMatchObject({ severity: 'warning', path: '/pluginServer/grpc/exposure/internal' });
    expect(byRule.get('SA009')).toMatchObject({
      severity: 'warning',
      path: '/agents/0/accounts/0',
      line: lineOf(RISKY, '- name: wide'),
    });
  });

  it('human output names rule, file:line and a summary line', async () => {
    const r = await cli(['check', risky]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`error SA003 wildcard-rbac: ${risky}:${lineOf(RISKY, "apiGroups: ['*']")}:`);
    expect(r.stdout).toContain(`${risky}: 3 error(s), 4 warning(s)`);
  });

  it('warnings pass by default and fail with --fail-on warning', async () => {
    // examples/infrastructure.yaml omits kube-system from a cluster-wide account (SA007, SA008), has two
    // cluster-wide read-write accounts (SA009) and an internal load balancer without source ranges (SA010).
    const example = join(root, 'examples', 'infrastructure.yaml');
    const lenient = await cli(['check', example, '--json']);
    expect(lenient.code).toBe(0);
    const report = JSON.parse(lenient.stdout) as { ok: boolean; errors: number; violations: Violation[] };
    expect(report).toMatchObject({ ok: true, errors: 0 });
    expect(report.violations.map((v) => v.rule).sort()).toEqual(['SA007', 'SA008', 'SA009', 'SA009', 'SA010']);
    const strict = await cli(['check', example, '--fail-on', 'warning']);
    expect(strict.code).toBe(1);
  });

  it('mixed warns only about its cluster-wide read-write account, located at it', async () => {
    const file = join(root, 'examples', 'mixed.yaml');
    const r = await cli(['check', file, '--json']);
    expect(r.code).toBe(0);
    const { violations } = JSON.parse(r.stdout) as { violations: Violation[] };
    const text = readFileSync(file, 'utf8');
    expect(violations).toEqual([
      expect.objectContaining({ rule: 'SA009', severity: 'warning', line: lineOf(text, '- name: remote-prod') }),
    ]);
  });

  it('the shipped service and agent examples pass every rule', async () => {
    for (const name of ['service', 'agent']) {
      const r = await cli(['check', join(root, 'examples', `${name}.yaml`), '--json', '--fail-on', 'warning']);
      expect(JSON.parse(r.stdout), name).toMatchObject({ ok: true, errors: 0, warnings: 0, violations: [] });
      expect(r.code, name).toBe(0);
    }
  });

  it('--list-rules documents every rule with a stable id', async () => {
    const r = await cli(['check', '--list-rules', '--json']);
    expect(r.code).toBe(0);
    const { rules } = JSON.parse(r.stdout) as { rules: { id: string; name: string; summary: string }[] };
    expect(rules.map((x) => x.id)).toEqual([
      'SA001',
      'SA002',
      'SA003',
      'SA004',
      'SA005',
      'SA006',
      'SA007',
      'SA008',
      'SA009',
      'SA010',
      'SA011',
      'SA012',
      'SA013',
      'SA014',
    ]);
    for (const x of rules) expect(x.summary.length, x.id).toBeGreaterThan(40);
  });
});

describe('scale-agent validate', () => {
  it('a valid example: exit 0', async () => {
    const r = await cli(['validate', join(root, 'examples', 'mixed.yaml')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('mixed.yaml: valid');
  });

  it('an invalid topology: every error as file:line:column path, exit 1; --json carries the same', async () => {
    const fixture = join(root, 'test/unit/compiler/fixtures/invalid/semantic-errors.txt');
    const human = await cli(['validate', fixture]);
    expect(human.code).toBe(1);
    expect(human.stderr).toMatch(
      new RegExp(`^${fixture}:\\d+:\\d+ /agents/1/accounts/0/name: account name 'prod'`, 'm'),
    );
    expect(human.stderr).toContain(`${fixture}: 14 errors`);
    const json = await cli(['validate', fixture, '--json']);
    expect(json.code).toBe(1);
    const body = JSON.parse(json.stdout) as { ok: boolean; errors: { line: number; path: string }[] };
    expect(body.ok).toBe(false);
    expect(body.errors).toHaveLength(14);
    for (const e of body.errors) expect(e.line, e.path).toBeGreaterThan(0);
  });

  it('check refuses the same invalid file before applying rules (exit 1, located errors)', async () => {
    const bad = join(mkdtempSync(join(tmpdir(), 'cli-check-')), 'bad.yaml');
    writeFileSync(bad, RISKY.replace(', address: grpc.example.com', ''));
    const r = await cli(['check', bad, '--json']);
    expect(r.code).toBe(1);
    const body = JSON.parse(r.stdout) as { ok: boolean; code: string; errors: { path: string; line: number }[] };
    expect(body).toMatchObject({ ok: false, code: 'SA_ERR_INVALID_INPUT' });
    expect(body.errors).toEqual([
      expect.objectContaining({ path: '/pluginServer/grpc/exposure', line: lineOf(RISKY, 'exposure:') }),
    ]);
  });
});
