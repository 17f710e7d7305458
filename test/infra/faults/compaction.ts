/**
 * 410 Gone mid-watch: etcd compacted at its current revision while the churn runs, then kube-apiserver restarted
 * (its watch cache would otherwise keep serving the old revisions from memory). Every watch the agent resumes from
 * a resourceVersion it holds is now below the compacted revision, so the API server answers 410 Gone and the
 * agent must relist each scope, with mark-and-sweep for what changed meanwhile.
 */
import type { Fault } from './catalogue.js';
import type { FaultRig } from './rig.js';

async function etcd(rig: FaultRig, path: string, body: object): Promise<Record<string, unknown>> {
  const res = await fetch(`${rig.cp!.etcdUrl}${path}`, { method: 'POST', body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`etcd ${path}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

const SYNC_STARTS = /^scale_agent_plugin_server_messages_received_total\{type="syncStart"\} (\d+)/m;

/** SyncStart messages the plugin-server has received: one per scope the agent (re)lists. */
async function syncStarts(rig: FaultRig): Promise<number> {
  const text = await (await fetch(`${rig.server.httpBase}/metrics`)).text();
  return Number(SYNC_STARTS.exec(text)?.[1] ?? 0);
}

export function compactionFault(): Fault {
  let compactedAt = '';
  let startsBefore = 0;
  return {
    id: 'compaction:etcd',
    fault: '410 Gone mid-watch (etcd compacted, API server restarted)',
    target: 'etcd + kube-apiserver',
    needs: { privateControlPlane: true },
    holdMs: 2_000,
    inject: async (rig) => {
      startsBefore = await syncStarts(rig);
      const range = await etcd(rig, '/v3/kv/range', { key: Buffer.from('/').toString('base64') });
      compactedAt = String((range.header as { revision: string }).revision);
      await etcd(rig, '/v3/kv/compaction', { revision: compactedAt, physical: true });
      await rig.cp!.restart('kube-apiserver');
    },
    observe: async (rig) => {
      // It bit when the agent relisted: its resumed watches were answered 410 Gone, and each relisted scope starts
      // with a SyncStart (a plain API server restart resumes the watches without one).
      const deadline = Date.now() + 30_000;
      let starts = await syncStarts(rig);
      while (starts <= startsBefore && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        starts = await syncStarts(rig);
      }
      return {
        bit: starts > startsBefore,
        note: `etcd compacted at revision ${compactedAt}; the agent relisted ${starts - startsBefore} scope(s)`,
      };
    },
    recover: async () => undefined,
  };
}
