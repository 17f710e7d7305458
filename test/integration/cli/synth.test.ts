import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { run } from '../../infra/index.js';

// `scale-agent synth` as an operator runs it: a real process, its instructions on stdout.
const bin = fileURLToPath(new URL('../../../bin/run.js', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));
const out = mkdtempSync(join(tmpdir(), 'cli-synth-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('scale-agent synth', () => {
  it('prints the places in apply order with the reason, their prerequisites and the Spinnaker side', async () => {
    const r = await run(process.execPath, [bin, 'synth', join(root, 'examples', 'mixed.yaml'), '--out', out], {
      allowFail: true,
    });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split('\n');
    const places = lines.filter((l) => /^ {2}\d+ /.test(l));
    // examples/mixed.yaml: account RBAC first, then the plugin-server, then agents by mode (service, infrastructure, agent).
    expect(places.map((l) => l.trim().split(' ')[1]?.replace(/:$/, ''))).toEqual([
      'account-ops',
      'account-remote-prod',
      'plugin-server',
      'agent-core',
      'agent-remote',
      'agent-edge',
    ]);
    for (const l of places) expect(l).toMatch(/\(.+\)$/);
    // REST authentication is on by default: its Secret is a prerequisite and Spinnaker is told what to configure.
    expect(r.stdout).toMatch(/needs Secret scale-agent-rest-tokens \(key tokens/);
    // Kubeconfig Secrets name the command that mints them, and for which accounts.
    expect(r.stdout).toMatch(
      /needs Secret kubeconfigs \(keys ops: kubeconfigs\).*`scale-agent kubeconfig .*\(accounts ops\)/,
    );
    const spinnaker = lines.slice(lines.indexOf('Spinnaker:') + 1).join('\n');
    expect(spinnaker).toContain('http://scale-agent-plugin-server.spinnaker.svc:7002');
    expect(spinnaker).toContain('no trusted networks');
    expect(spinnaker).toContain('Secret scale-agent-rest-tokens, key tokens');
  });
});
