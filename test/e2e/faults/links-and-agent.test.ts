/**
 * A representative slice of the fault matrix (`npm run faults` runs all of it): connections between agent and
 * plugin-server reset, then blackholed for longer than the session idle timeout; the agent frozen (SIGSTOP) past
 * its heartbeats; latency with jitter between agent and API server; the API server answering the agent (a
 * ServiceAccount, as in production) 429 from API Priority and Fairness, then 500 from a failing admission webhook.
 * Churn of four kinds (one a CRD) in three namespaces and REST operations run through each. After each: the cache
 * equals the API server, and every operation posted ended succeeded or failed-retryable (resumed once, as Orca
 * does), exactly once in the cluster — or, for the webhook's 500s, failed and said so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSurvived } from './_survived.js';
import { faultById, FaultRig, Load, runFault } from '../../infra/faults/index.js';

describe('faults: agent ↔ plugin-server, agent ↔ API server, agent process (memory store)', () => {
  let rig: FaultRig;
  let load: Load;

  beforeAll(async () => {
    rig = await FaultRig.onSharedCluster('links', { store: 'memory' });
    load = await Load.create(rig);
  });
  afterAll(async () => {
    await rig?.stop();
  });

  it('connections reset on the gRPC link: converges, no operation lost or run twice', async () => {
    expectSurvived(await runFault(rig, load, faultById('reset:grpc')));
  });

  it('gRPC link blackholed past the idle timeout: the stream is replaced, nothing lost or run twice', async () => {
    const reconnectsBefore = await rig.server.metric('scale_agent_plugin_server_sessions_opened_total');
    const r = await runFault(rig, load, faultById('blackhole:grpc'));
    expectSurvived(r);
    // The plugin-server answered throughout (the fault is on the link, not the server).
    expect(r.during).toMatchObject({ readyz: 200, read: 200 });
    expect(await rig.server.metric('scale_agent_plugin_server_sessions_opened_total')).toBeGreaterThan(
      reconnectsBefore,
    );
  });

  it('agent frozen (SIGSTOP) past its heartbeats, then SIGCONT: converges, nothing lost or run twice', async () => {
    expectSurvived(await runFault(rig, load, faultById('sigstop:agent')));
  });

  it('latency with jitter between agent and API server: converges, nothing lost or run twice', async () => {
    expectSurvived(await runFault(rig, load, faultById('latency:apiserver')));
  });

  it('429s from API Priority and Fairness: the agent rides them out, nothing lost or run twice', async () => {
    const r = await runFault(rig, load, faultById('apf-429:kube-apiserver'));
    // The API server did reject the agent (the fault bit; the count is from its flow-control metrics).
    expect(r.bite, r.bite?.note).toMatchObject({ bit: true });
    expectSurvived(r);
  });

  it('500s from a failing webhook on the agent’s writes: each operation ends once; those safe to resume, resumable', async () => {
    const r = await runFault(rig, load, faultById('webhook-500:kube-apiserver'));
    expect(r.bite, r.bite?.note).toMatchObject({ bit: true });
    expect(r.diff).toMatchObject({ equal: true, missing: [], extra: [], stale: [] });
    expect(r.ops.lost, JSON.stringify(r.ops)).toEqual([]);
    expect(r.ops.duplicates).toEqual([]);
    // A deploy (server-side apply: safe to send again) refused by the webhook failed as retryable and was resumed,
    // as Orca would; a JSON-patch append may have been applied before the 500, so it failed and said so.
    expect(r.ops.resumed).toBeGreaterThan(0);
    for (const f of r.ops.failed) expect(f).toMatch(/^append .*failed calling webhook/);
    expect(r.ops.outcomes.succeeded + r.ops.outcomes['failed-retryable'] + r.ops.outcomes.failed).toBe(r.ops.posted);
  });
});
