/**
 * Graceful shutdown of a replica (SIGTERM, as Kubernetes stops a pod): every connection gets an explicit HTTP/2
 * GOAWAY before its agent stream ends, and the agent reconnects through the load balancer to the other replica,
 * which resumes it from the stored resume points (no relist) with no change lost during the hand-off.
 */
import { connect, constants, type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_SERVICE_NAME } from '../../src/shared/proto.js';
import { waitForCacheToMatch, type CacheCheckOptions } from '../infra/cache-checker.js';
import { kubectl, waitFor } from '../infra/index.js';
import { configMapList } from '../infra/manifests.js';
import type { AgentProcess, PluginServerProcess } from '../infra/processes.js';
import { startReplicas, type Stack } from '../infra/stack.js';

const ACCOUNT = 'goaway-0';
const SYNC_STARTS = 'scale_agent_plugin_server_messages_received_total{type="syncStart"}';
const RELISTS = 'scale_agent_agent_watch_restarts_total{reason="gone"}';

/**
 * A bare HTTP/2 connection with one open AgentService stream (no Hello), as an agent's looks on the wire; it records
 * the frames that end it in the order they arrive.
 */
async function rawAgentConnection(address: string): Promise<{ session: ClientHttp2Session; events: string[] }> {
  const events: string[] = [];
  const session = connect(`http://${address}`);
  session.on('goaway', (code: number) => events.push(`goaway:${code}`));
  session.on('close', () => events.push('close'));
  session.on('error', (e: Error) => events.push(`error:${e.message}`));
  const stream = session.request({
    ':method': 'POST',
    ':path': `/${AGENT_SERVICE_NAME}/Connect`,
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  const status = (h: IncomingHttpHeaders) => {
    if (h['grpc-status'] !== undefined) events.push(`grpc-status:${String(h['grpc-status'])}`);
  };
  stream.on('response', status);
  stream.on('trailers', status);
  stream.on('error', () => undefined);
  stream.resume();
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => session.ping((err) => (err ? reject(err) : resolve())));
    session.once('error', reject);
  });
  return { session, events };
}

describe('SIGTERM of a replica behind HAProxy', () => {
  let stack: Stack;
  let replicas: PluginServerProcess[];
  let agent: AgentProcess;
  let ns: string;
  let check: CacheCheckOptions;

  beforeAll(async () => {
    stack = await startReplicas('goaway', { gracePeriodSeconds: 60, leaseSeconds: 3 }, { loadBalancer: true });
    ({ replicas, ns } = stack);
    await kubectl(['apply', '-f', '-'], { input: configMapList(ns, 'seed', 0, 20) });
    agent = await stack.addAgent({ agentId: 'goaway-agent', accounts: [{ name: ACCOUNT, kinds: ['ConfigMap'] }] });
    check = stack.cacheCheck(ACCOUNT);
    await waitForCacheToMatch(check);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('sends GOAWAY before ending the stream; the agent resumes on the other replica, no relist, no change lost', async () => {
    const holderOf = async (r: PluginServerProcess) =>
      (await r.get<{ heldBy: unknown; state: string }>(`/armory/accounts/${ACCOUNT}`)).body;
    const victim = await waitFor('the replica holding the account', async () => {
      for (const r of replicas) if ((await holderOf(r)).heldBy === 'local') return r;
      return undefined;
    });
    const survivor = replicas.find((r) => r !== victim)!;
    const raw = await rawAgentConnection(victim.grpcAddress);
    const syncsBefore = await survivor.metric(SYNC_STARTS);
    const relistsBefore = await agent.metric(RELISTS);
    const reconnectsBefore = await agent.metric('scale_agent_agent_reconnects_total');

    let stop = false;
    const churn = (async () => {
      for (let round = 0; !stop; round++) {
        await kubectl(['apply', '-f', '-'], { input: configMapList(ns, `churn-${round}`, 0, 5) });
        await sleep(100);
      }
    })();
    await sleep(500);
    await victim.stop(); // SIGTERM, and waits until the process is gone
    await sleep(1500);
    stop = true;
    await churn;

    // GOAWAY (NO_ERROR) first, then the stream's UNAVAILABLE, then the connection closes.
    expect(raw.events[0]).toBe(`goaway:${constants.NGHTTP2_NO_ERROR}`);
    expect(raw.events).toContain('grpc-status:14');
    expect(raw.events.indexOf('grpc-status:14')).toBeLessThan(raw.events.indexOf('close'));
    raw.session.destroy();

    await waitFor('the survivor holds the account', async () => {
      const v = await holderOf(survivor);
      return v.heldBy === 'local' && v.state === 'ACTIVE' ? true : undefined;
    });
    await waitForCacheToMatch(check);
    // Resumed where it left off: no initial sync on the survivor, no relist in the agent, one reconnect.
    expect(await survivor.metric(SYNC_STARTS)).toBe(syncsBefore);
    expect(await agent.metric(RELISTS)).toBe(relistsBefore);
    expect(await agent.metric('scale_agent_agent_reconnects_total')).toBeGreaterThan(reconnectsBefore);
    expect(await agent.metric('scale_agent_agent_connected')).toBe(1);
  });
});
