/**
 * `scale-agent check` around PodDisruptionBudgets. A topology cannot ask for "replicas > 1 without a budget" (the
 * model always adds one), so the rules catch what can still go wrong: one MySQL-backed plugin-server replica, which
 * gets no budget (SA012), and a budget that can never allow a second eviction because the replicas are held to one
 * node (SA013). Each finding is located in the fixture.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildPlaces } from '../../../src/compiler/model.js';
import { checkTopology, loadTopology } from '../../../src/compiler/index.js';
import { ROOT } from './_helpers.js';

const FIXTURE = join(ROOT, 'test/unit/compiler/fixtures/check/disruption.yaml');
const text = readFileSync(FIXTURE, 'utf8');
const lineOf = (needle: string): number => text.split('\n').findIndex((l) => l.includes(needle)) + 1;

describe('check: disruption rules', () => {
  it('reports the single MySQL-backed replica and both single-node pins, located, and nothing for a node pool', async () => {
    const { topology, source } = await loadTopology(FIXTURE);
    const report = checkTopology(topology, source);
    const found = report.violations
      .filter((v) => v.rule === 'SA012' || v.rule === 'SA013')
      .map(({ rule, severity, line, path, message }) => ({ rule, severity, line, path, message }));
    expect(found).toEqual([
      {
        rule: 'SA012',
        severity: 'warning',
        line: lineOf('replicas: 1'),
        path: '/pluginServer/replicas',
        message: 'one plugin-server replica on shared storage: a node drain takes the control plane down',
      },
      {
        rule: 'SA013',
        severity: 'error',
        line: lineOf('kubernetes.io/hostname: node-a'),
        path: '/agents/0/pod/nodeSelector/kubernetes.io~1hostname',
        message:
          "agent group 'by-selector' runs 2 replicas on one node: its PodDisruptionBudget blocks that node's drain",
      },
      {
        rule: 'SA013',
        severity: 'error',
        line: lineOf('requiredDuringSchedulingIgnoredDuringExecution:'),
        path: '/agents/1/pod/affinity/nodeAffinity',
        message:
          "agent group 'by-affinity' runs 3 replicas on one node: its PodDisruptionBudget blocks that node's drain",
      },
    ]);
    expect(report.ok).toBe(false);
  });

  it('the premise: the model gives every workload with more than one replica a budget, and none to one', async () => {
    const { topology } = await loadTopology(FIXTURE);
    const budgets = new Map(
      buildPlaces(topology, undefined)
        .filter((p) => p.workload)
        .map((p) => [p.kind === 'agent' ? `agent-${p.agent?.name}` : p.kind, p.workload?.maxUnavailable] as const),
    );
    expect([...budgets.keys()].sort()).toEqual([
      'agent-by-affinity',
      'agent-by-pool',
      'agent-by-selector',
      'plugin-server',
    ]);
    expect(budgets.get('plugin-server')).toBeUndefined();
    for (const group of ['by-selector', 'by-affinity', 'by-pool']) expect(budgets.get(`agent-${group}`), group).toBe(1);
  });
});
