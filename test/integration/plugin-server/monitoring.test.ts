/**
 * charts/scale-agent/files/scale-agent.rules.yaml and scale-agent.json (the alert rules and dashboard) against the real promtool (built by tools/k8s) and the real runtimes: the rules
 * parse, every metric they and the dashboard use is exported by a running plugin-server or agent, and the ORPHANED alert fires on the
 * values a plugin-server reports after its agent is killed.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createNamespace, promtool, testEnv } from '../../infra/index.js';
import { AgentProcess, PluginServerProcess } from '../../infra/processes.js';

const rulesFile = fileURLToPath(new URL('../../../charts/scale-agent/files/scale-agent.rules.yaml', import.meta.url));
const dashboardFile = fileURLToPath(new URL('../../../charts/scale-agent/files/scale-agent.json', import.meta.url));

interface Rule {
  alert: string;
  expr: string;
  annotations: Record<string, string>;
}

describe('alert rules', () => {
  let dir: string;
  let server: PluginServerProcess;
  let agent: AgentProcess;
  const rules = (parse(readFileSync(rulesFile, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap(
    (g) => g.rules,
  );

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sa-alerts-'));
    const ns = await createNamespace('alerts');
    server = await PluginServerProcess.start({ dir });
    const spec = { name: 'alerted', kubeconfigFile: testEnv().kubeconfig, namespaces: [ns], kinds: ['ConfigMap'] };
    agent = await AgentProcess.start({ dir, serverAddress: server.grpcAddress, accounts: [spec] });
  });
  afterAll(async () => {
    await agent?.stop();
    await server?.stop();
  });

  it('parse under promtool, and link runbooks that exist in docs/operations.md', async () => {
    const r = await promtool(['check', 'rules', rulesFile], { allowFail: true });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`SUCCESS: ${rules.length} rules found`));
    const runbook = readFileSync(fileURLToPath(new URL('../../../docs/operations.md', import.meta.url)), 'utf8');
    const anchors = new Set([...runbook.matchAll(/^### (\S+)$/gm)].map((m) => m[1]!.toLowerCase()));
    for (const rule of rules) {
      expect(rule.annotations.runbook_url).toBe(`docs/operations.md#${rule.alert.toLowerCase()}`);
      expect(anchors.has(rule.alert.toLowerCase()), rule.alert).toBe(true);
    }
  });

  it('use only metrics the running plugin-server and agent export', async () => {
    const exported =
      (await (await fetch(`${server.httpBase}/metrics`)).text()) +
      (await (await fetch(`${agent.adminBase}/metrics`)).text());
    const families = new Set([...exported.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    const used = new Set(rules.flatMap((r) => [...r.expr.matchAll(/scale_agent_[a-z_]+/g)].map((m) => m[0])));
    expect(used.size).toBeGreaterThan(5);
    const missing = [...used].filter((m) => !families.has(m.replace(/_(bucket|sum|count)$/, '')));
    expect(missing).toEqual([]);
  });

  it('the Grafana dashboard queries only metrics the running plugin-server and agent export', async () => {
    const exported =
      (await (await fetch(`${server.httpBase}/metrics`)).text()) +
      (await (await fetch(`${agent.adminBase}/metrics`)).text());
    const families = new Set([...exported.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    const dashboard = JSON.parse(readFileSync(dashboardFile, 'utf8')) as { panels: { targets?: { expr: string }[] }[] };
    const exprs = dashboard.panels.flatMap((p) => p.targets ?? []).map((t) => t.expr);
    expect(exprs.length).toBeGreaterThan(10);
    const used = new Set(exprs.flatMap((e) => [...e.matchAll(/scale_agent_[a-z0-9_]+/g)].map((m) => m[0])));
    const missing = [...used].filter((m) => !families.has(m.replace(/_(bucket|sum|count)$/, '')));
    expect(missing).toEqual([]);
  });

  it('ScaleAgentAccountOrphaned fires on what the plugin-server reports after its agent is killed', async () => {
    await agent.kill();
    let orphaned = 0;
    for (let i = 0; i < 100 && orphaned === 0; i++) {
      orphaned = await server.metric('scale_agent_plugin_server_accounts{state="ORPHANED"}');
      if (orphaned === 0) await sleep(100);
    }
    expect(orphaned).toBe(1);
    const active = await server.metric('scale_agent_plugin_server_accounts{state="ACTIVE"}');
    const orphanedRule = rules.find((r) => r.alert === 'ScaleAgentAccountOrphaned')!;
    // The scraped values, held for 5 minutes of evaluation: the alert is pending until its `for` is over, then fires.
    const test = join(dir, 'orphaned.test.yaml');
    writeFileSync(
      test,
      JSON.stringify({
        rule_files: [rulesFile],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: [
              { series: `scale_agent_plugin_server_accounts{state="ORPHANED",instance="ps"}`, values: `${orphaned}x5` },
              { series: `scale_agent_plugin_server_accounts{state="ACTIVE",instance="ps"}`, values: `${active}x5` },
            ],
            alert_rule_test: [
              { eval_time: '1m', alertname: 'ScaleAgentAccountOrphaned', exp_alerts: [] },
              {
                eval_time: '3m',
                alertname: 'ScaleAgentAccountOrphaned',
                exp_alerts: [
                  {
                    exp_labels: { severity: 'warning', instance: 'ps' },
                    exp_annotations: {
                      summary: '1 account(s) have no connected agent on ps',
                      description: orphanedRule.annotations.description,
                      runbook_url: 'docs/operations.md#scaleagentaccountorphaned',
                    },
                  },
                ],
              },
            ],
          },
        ],
      }),
    );
    const r = await promtool(['test', 'rules', test], { allowFail: true });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('SUCCESS');
  });
});
