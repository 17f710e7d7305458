/**
 * The chart's optional dashboard ConfigMap and PrometheusRule, rendered by the real helm: off by default, and when on
 * they carry exactly the one copy of each file (charts/scale-agent/files/, which docs/operations.md links), the rules
 * still pass the real promtool, and `helm lint --strict` accepts them.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { helm, promtool } from '../../infra/index.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const CHART = join(root, 'charts', 'scale-agent');
const dashboardFile = join(CHART, 'files', 'scale-agent.json');
const rulesFile = join(CHART, 'files', 'scale-agent.rules.yaml');
const ON = ['--set', 'monitoring.dashboard.enabled=true', '--set', 'monitoring.prometheusRule.enabled=true'];

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  data?: Record<string, string>;
  spec?: { groups: unknown[] };
}

// Release `r`: the chart prefixes its names with `<release>-scale-agent`.
const DASHBOARD = 'r-scale-agent-dashboard';

async function render(args: string[]): Promise<K8sObject[]> {
  const { stdout } = await helm(['template', 'r', CHART, '--namespace', 'monitoring', ...args]);
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

describe('chart monitoring', () => {
  it('installs neither the dashboard nor the rules by default', async () => {
    const objects = await render(['--set', 'pluginServer.enabled=true']);
    expect(objects.length).toBeGreaterThan(0);
    expect(objects.filter((o) => o.kind === 'PrometheusRule' || o.metadata.name === DASHBOARD)).toEqual([]);
  });

  it('puts the dashboard file, byte for byte, in a ConfigMap with the Grafana sidecar label', async () => {
    const objects = await render([...ON, '--set', 'monitoring.dashboard.annotations.grafana_folder=Spinnaker']);
    const cm = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === DASHBOARD);
    expect(cm?.metadata.labels?.grafana_dashboard).toBe('1');
    expect(cm?.metadata.labels?.['app.kubernetes.io/component']).toBe('monitoring');
    expect(cm?.metadata.annotations).toEqual({ grafana_folder: 'Spinnaker' });
    expect(cm?.data?.['scale-agent.json']).toBe(readFileSync(dashboardFile, 'utf8').replace(/\n$/, ''));
    expect((JSON.parse(cm!.data!['scale-agent.json']!) as { uid: string }).uid).toBe('scale-agent-overview');
  });

  it('puts the rule groups in a PrometheusRule that promtool accepts', async () => {
    const objects = await render([...ON, '--set', 'monitoring.prometheusRule.labels.release=kube-prometheus-stack']);
    const rule = objects.find((o) => o.kind === 'PrometheusRule');
    expect(rule?.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(rule?.metadata.labels?.release).toBe('kube-prometheus-stack');
    const source = parse(readFileSync(rulesFile, 'utf8')) as { groups: unknown[] };
    expect(rule?.spec?.groups).toEqual(source.groups);
    // What the Prometheus Operator hands Prometheus is the spec: it must still be a valid rule file.
    const file = join(mkdtempSync(join(tmpdir(), 'sa-chart-rules-')), 'rules.yaml');
    writeFileSync(file, JSON.stringify(rule!.spec));
    const check = await promtool(['check', 'rules', file], { allowFail: true });
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toMatch(/SUCCESS: [1-9]\d* rules found/);
  });

  it('lints --strict with both on, and the schema refuses a misspelt monitoring key', async () => {
    const lint = await helm(['lint', '--strict', CHART, '--set', 'pluginServer.enabled=true', ...ON], {
      allowFail: true,
    });
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    const typo = await helm(['template', 'r', CHART, '--set', 'monitoring.dashbord.enabled=true'], { allowFail: true });
    expect(typo.code).not.toBe(0);
    expect(typo.stderr).toMatch(/dashbord|additional/i);
  });

  it('is the only copy of each file in the repository, and docs/operations.md links it', () => {
    const tracked = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
      cwd: root,
      encoding: 'utf8',
    }).split('\n');
    for (const file of [dashboardFile, rulesFile]) {
      const copies = tracked.filter((f) => basename(f) === basename(file));
      expect(copies, basename(file)).toEqual([relative(root, file)]);
    }
    const ops = readFileSync(join(root, 'docs', 'operations.md'), 'utf8');
    expect(ops).toContain('](../charts/scale-agent/files/scale-agent.json)');
    expect(ops).toContain('](../charts/scale-agent/files/scale-agent.rules.yaml)');
  });
});
