import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { AccountActivity } from './account-activity.js';
import type { AccountRegistry } from './accounts.js';
import { CountSnapshot } from './cache/count-snapshot.js';
import type { ObjectCache } from './cache/store.js';

/** How old the cached-object counts on /metrics may be (each refresh counts the whole cache). */
export const CACHED_OBJECTS_MAX_AGE_MS = 15_000;

/** The plugin-server's metrics, on their own registry (two servers in one process, as in tests, do not clash). */
export class PluginServerMetrics {
  readonly registry = new Registry();
  readonly sessions: Gauge;
  readonly sessionsOpened: Counter;
  readonly sessionsClosed: Counter<'reason'>;
  readonly messagesReceived: Counter<'type'>;
  readonly bytesReceived: Counter;
  readonly changes: Counter<'result'>;
  readonly changeLag: Histogram;
  readonly storeWrite: Histogram<'store'>;
  readonly droppedChanges: Counter<'reason'>;
  /** Where incoming objects were parsed and checked (ingest/check-pool.ts). */
  readonly objectsChecked: Counter<'on'>;
  readonly accountRejections: Counter<'reason'>;
  readonly upstreamErrors: Counter<'reason' | 'use'>;
  readonly fiatErrors: Counter<'reason'>;
  /** dynamicAccounts.scan (accounts/account-scan.ts): rounds, accounts taken and refused. */
  readonly accountScan: { rounds: Counter<'result'>; accounts: Counter<'outcome'>; refused: Gauge };
  /** grpc.tls reloads (src/plugin-server/tls/): how each change of the files went, and the serving certificate. */
  readonly tls: { reloads: Counter<'result'>; notAfter: Gauge };
  /** Per-account lag and sync progress, for /armory/accounts (not labelled series: see account-activity.ts). */
  readonly activity = new AccountActivity();

  constructor(deps: { store: Pick<ObjectCache, 'counts'>; accounts: AccountRegistry; now?: () => number }) {
    const registers = [this.registry];
    const counts = new CountSnapshot(deps.store, CACHED_OBJECTS_MAX_AGE_MS, deps.now);
    collectDefaultMetrics({ register: this.registry, prefix: 'scale_agent_plugin_server_' });
    this.sessions = new Gauge({
      name: 'scale_agent_plugin_server_sessions',
      help: 'Agent streams currently open.',
      registers,
    });
    this.sessionsOpened = new Counter({
      name: 'scale_agent_plugin_server_sessions_opened_total',
      help: 'Agent streams accepted.',
      registers,
    });
    this.sessionsClosed = new Counter({
      name: 'scale_agent_plugin_server_sessions_closed_total',
      help: 'Agent streams closed, by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.messagesReceived = new Counter({
      name: 'scale_agent_plugin_server_messages_received_total',
      help: 'Agent messages received, by type.',
      labelNames: ['type'],
      registers,
    });
    this.bytesReceived = new Counter({
      name: 'scale_agent_plugin_server_object_bytes_received_total',
      help: 'Bytes of object JSON received from agents.',
      registers,
    });
    this.changes = new Counter({
      name: 'scale_agent_plugin_server_changes_total',
      help: 'Changes applied to the cache or skipped as not newer than what it holds.',
      labelNames: ['result'],
      registers,
    });
    this.droppedChanges = new Counter({
      name: 'scale_agent_plugin_server_changes_dropped_total',
      help: 'Changes dropped because the stream does not hold their account.',
      labelNames: ['reason'],
      registers,
    });
    this.objectsChecked = new Counter({
      name: 'scale_agent_plugin_server_objects_checked_total',
      help: 'Objects from agents parsed and checked, by where: on a check thread (large batches) or the event loop.',
      labelNames: ['on'],
      registers,
    });
    this.accountRejections = new Counter({
      name: 'scale_agent_plugin_server_account_rejections_total',
      help: 'Account registrations refused, by reason (unauthorized, conflict, invalid_name, duplicate, dynamic, upstream).',
      labelNames: ['reason'],
      registers,
    });
    this.upstreamErrors = new Counter({
      name: 'scale_agent_upstream_errors_total',
      help: 'Front mode: requests to the upstream Clouddriver that got no usable answer, by reason (timeout, connect, status) and use (proxy: a proxied request answered 502/504; merge: a merged list answered with the agent accounts only).',
      labelNames: ['reason', 'use'],
      registers,
    });
    this.accountScan = {
      rounds: new Counter({
        name: 'scale_agent_plugin_server_account_scans_total',
        help: "Automatic migration rounds (dynamicAccounts.scan), by result: ok, or error when Clouddriver's accounts could not be read.",
        labelNames: ['result'],
        registers,
      }),
      accounts: new Counter({
        name: 'scale_agent_plugin_server_account_scan_accounts_total',
        help: 'Accounts the automatic migration moved to agents (created; would_create in a dry run) or refused, summed over rounds.',
        labelNames: ['outcome'],
        registers,
      }),
      refused: new Gauge({
        name: 'scale_agent_plugin_server_account_scan_refused',
        help: 'Matching accounts the last automatic migration round refused (GET /admin/account-scan names them and why).',
        registers,
      }),
    };
    this.fiatErrors = new Counter({
      name: 'scale_agent_fiat_errors_total',
      help: 'spinnaker.fiat: permission lookups Fiat gave no usable answer to, by reason (timeout, connect, status, invalid). Reads of agent accounts that needed one answered 503.',
      labelNames: ['reason'],
      registers,
    });
    this.tls = {
      reloads: new Counter({
        name: 'scale_agent_plugin_server_tls_reloads_total',
        help: 'Changes of the grpc.tls files, by result (success: new handshakes present the new certificate; error: refused, the previous one keeps serving).',
        labelNames: ['result'],
        registers,
      }),
      notAfter: new Gauge({
        name: 'scale_agent_plugin_server_tls_certificate_not_after_timestamp_seconds',
        help: 'Expiry (notAfter, Unix seconds) of the gRPC server certificate new handshakes present.',
        registers,
      }),
    };
    this.changeLag = new Histogram({
      name: 'scale_agent_plugin_server_change_lag_seconds',
      help: "From the agent reading a change off its watch to the change being in the cache (agent's clock).",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.storeWrite = new Histogram({
      name: 'scale_agent_plugin_server_store_write_seconds',
      help: 'Duration of one cache store write (one batch of ops).',
      labelNames: ['store'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    const activity = this.activity;
    deps.accounts.onChange((name, state) => {
      if (state === 'REMOVED') activity.forget(name);
    });
    new Gauge({
      name: 'scale_agent_plugin_server_accounts_syncing',
      help: 'Accounts held here whose agent is listing them (initial sync or relist); progress in /armory/accounts.',
      registers,
      collect() {
        this.set(activity.syncing((name) => deps.accounts.get(name)?.sessionId));
      },
    });
    new Gauge({
      name: 'scale_agent_plugin_server_accounts',
      help: 'Registered accounts, by state.',
      labelNames: ['state'],
      registers,
      collect() {
        for (const [state, n] of Object.entries(deps.accounts.countByState())) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'scale_agent_plugin_server_cached_objects',
      help: `Objects in the cache, by account and kind (counted at most every ${CACHED_OBJECTS_MAX_AGE_MS / 1000} s).`,
      labelNames: ['account', 'kind'],
      registers,
      async collect() {
        this.reset();
        for (const c of await counts.get()) {
          this.set({ account: c.account, kind: c.group ? `${c.kind}.${c.group}` : c.kind }, c.count);
        }
      },
    });
  }
}
