/**
 * Faults the API server itself answers with, aimed at the rig's agent only (its ServiceAccount; the churn and the
 * checker, as the admin, go on unharmed):
 *
 * - `apf-429`: API Priority and Fairness puts the agent's requests in a priority level with no shares and no
 *   borrowing (nominalConcurrencyShares 0, limitResponse Reject): one seat, since the API server gives no level
 *   less, and every request that finds it taken gets 429. A neighbour (another ServiceAccount, in the same level)
 *   keeps listing from a few loops, so the seat is mostly taken; the agent's connections are dropped as it begins,
 *   so its watches restart at once against it (watches already open would not notice: APF holds a seat only while
 *   a watch starts).
 * - `webhook-500`: a validating admission webhook with failurePolicy Fail whose URL refuses connections, matching the
 *   agent's creates and updates of ConfigMaps and Widgets in the operations' namespace: the API server answers 500
 *   InternalError ("failed calling webhook") and writes nothing.
 *
 * Each waits until a probe request as the agent shows the configuration in force (the API server applies it from
 * its informers, a moment later); the counts come from the API server's /metrics.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { freePort } from '../ports.js';
import { waitFor } from '../wait.js';
import type { Fault } from './catalogue.js';
import { kubeFetch, kubeRequest, metricSum } from './kube-raw.js';
import type { FaultRig } from './rig.js';
import { WIDGET_GROUP } from './rig.js';

const FLOWCONTROL = '/apis/flowcontrol.apiserver.k8s.io/v1';
const ADMISSION = '/apis/admissionregistration.k8s.io/v1';
const WEBHOOK = `refuse.${WIDGET_GROUP}`;
const SETTLE_MS = 15_000;
const REJECTED = 'apiserver_flowcontrol_rejected_requests_total';
const REFUSED = 'apiserver_admission_webhook_rejection_count';

async function metrics(rig: FaultRig): Promise<string> {
  const r = await kubeFetch(rig.kubeConfig(), 'GET', '/metrics');
  if (r.status !== 200) throw new Error(`GET /metrics: ${r.status}`);
  return r.text;
}

/** Polls `probe` until it says yes; how long that took. */
async function until(probe: () => Promise<boolean>, what: string): Promise<number> {
  const t0 = Date.now();
  await waitFor(what, probe, SETTLE_MS);
  return Date.now() - t0;
}

function identity(rig: FaultRig) {
  const id = rig.agentIdentity;
  if (!id) throw new Error('the rig has no agent identity');
  return id;
}

const NEIGHBOUR = 'faults-neighbour';
/** Concurrent request loops of the neighbour, and its pause after each answer (a rejection is answered at once). */
const NEIGHBOUR_LOOPS = 6;
const NEIGHBOUR_PAUSE_MS = 20;

/**
 * Another workload in the agent's priority level: a ServiceAccount allowed to read the operations' namespace, with
 * a token. Created once per rig (it goes with the namespace).
 */
async function neighbourKubeConfig(rig: FaultRig): Promise<KubeConfig> {
  const kc = rig.kubeConfig();
  const ns = rig.namespaces[0]!;
  const exists = (e: unknown) => {
    if (!String(e).includes(' 409 ')) throw e;
  };
  await kubeRequest(kc, 'POST', `/api/v1/namespaces/${ns}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: NEIGHBOUR },
  }).catch(exists);
  await kubeRequest(kc, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: NEIGHBOUR },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
    subjects: [{ kind: 'ServiceAccount', name: NEIGHBOUR, namespace: ns }],
  }).catch(exists);
  const tr = await kubeRequest<{ status: { token: string } }>(
    kc,
    'POST',
    `/api/v1/namespaces/${ns}/serviceaccounts/${NEIGHBOUR}/token`,
    { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3_600 } },
  );
  const user = kc.getCurrentUser()!;
  kc.users = kc.users.map((u) => (u.name === user.name ? { ...u, token: tr.status.token } : u));
  return kc;
}

/** Lists the namespace's ConfigMaps as the neighbour, from a few loops at once, until `signal` aborts. */
async function crowd(kc: KubeConfig, ns: string, signal: AbortSignal): Promise<void> {
  const loop = async () => {
    while (!signal.aborted) {
      await kubeFetch(kc, 'GET', `/api/v1/namespaces/${ns}/configmaps`).catch(() => undefined);
      await sleep(NEIGHBOUR_PAUSE_MS);
    }
  };
  await Promise.all(Array.from({ length: NEIGHBOUR_LOOPS }, loop));
}

/** The agent's requests rejected with 429 by API Priority and Fairness while it holds. */
export function apfFault(): Fault {
  let n = 0;
  let names = { pl: '', fs: '', neighbour: '' };
  let crowding: { stop: AbortController; done: Promise<void> } | undefined;
  let inForceAfter = NaN;
  let before = 0;
  /** A list as the agent; APF names the FlowSchema that classified it in a response header. */
  const listAsAgent = (rig: FaultRig) =>
    kubeFetch(rig.agentKubeConfig(), 'GET', `/api/v1/namespaces/${rig.namespaces[0]}/configmaps?limit=1`);
  return {
    id: 'apf-429:kube-apiserver',
    fault: '429 from APF 8 s (1 seat shared with a busy neighbour)',
    target: 'kube-apiserver (agent’s flow)',
    needs: {},
    holdMs: 8_000,
    inject: async (rig) => {
      const id = identity(rig);
      const kc = rig.kubeConfig();
      n += 1;
      names = { pl: `faults-jail-${n}`, fs: `faults-agent-jail-${n}`, neighbour: `faults-neighbour-jail-${n}` };
      before = metricSum(await metrics(rig), REJECTED, { flow_schema: names.fs });
      await kubeRequest(kc, 'POST', `${FLOWCONTROL}/prioritylevelconfigurations`, {
        apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
        kind: 'PriorityLevelConfiguration',
        metadata: { name: names.pl },
        spec: {
          type: 'Limited',
          // No shares and nothing to borrow: the level runs on the one seat the API server never goes below, and
          // rejects whatever does not fit at once (no queue).
          limited: {
            nominalConcurrencyShares: 0,
            lendablePercent: 0,
            borrowingLimitPercent: 0,
            limitResponse: { type: 'Reject' },
          },
        },
      });
      const flowSchema = (name: string, subject: { name: string; namespace: string }) =>
        kubeRequest<{ metadata: { uid: string } }>(kc, 'POST', `${FLOWCONTROL}/flowschemas`, {
          apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
          kind: 'FlowSchema',
          metadata: { name },
          spec: {
            priorityLevelConfiguration: { name: names.pl },
            // Ahead of every suggested schema but `exempt` (1) and `probes` (2).
            matchingPrecedence: 10,
            distinguisherMethod: { type: 'ByUser' },
            rules: [
              {
                subjects: [{ kind: 'ServiceAccount', serviceAccount: subject }],
                resourceRules: [
                  { verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] },
                ],
                nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
              },
            ],
          },
        });
      const fs = await flowSchema(names.fs, { name: id.serviceAccount, namespace: id.namespace });
      await flowSchema(names.neighbour, { name: NEIGHBOUR, namespace: rig.namespaces[0]! });
      inForceAfter = await until(async () => {
        const r = await listAsAgent(rig);
        return r.status === 429 || r.headers['x-kubernetes-pf-flowschema-uid'] === fs.metadata.uid;
      }, 'the agent’s requests to be classified into the jail');
      // One seat would hold an agent alone (it makes few requests at once): a neighbour in the same level keeps it
      // busy, as another workload saturating a shared level does. And the agent's connections are dropped, so its
      // watches restart together under it, as after an API server restart.
      const stop = new AbortController();
      crowding = { stop, done: crowd(await neighbourKubeConfig(rig), rig.namespaces[0]!, stop.signal) };
      await rig.toxiproxy.setEnabled('apiserver', false);
      await rig.toxiproxy.setEnabled('apiserver', true);
    },
    observe: async (rig) => {
      const text = await metrics(rig);
      const rejected = metricSum(text, REJECTED, { flow_schema: names.fs }) - before;
      const neighbour = metricSum(text, REJECTED, { flow_schema: names.neighbour });
      return {
        bit: rejected > 0,
        note:
          `in force ${inForceAfter} ms after the FlowSchema was created; ${rejected} of the agent's requests ` +
          `rejected with 429 (apiserver_flowcontrol_rejected_requests_total{flow_schema="${names.fs}"}); the ` +
          `neighbour's: ${neighbour}`,
      };
    },
    recover: async (rig) => {
      crowding?.stop.abort();
      await crowding?.done;
      const kc = rig.kubeConfig();
      await kubeRequest(kc, 'DELETE', `${FLOWCONTROL}/flowschemas/${names.neighbour}`).catch(() => undefined);
      await kubeRequest(kc, 'DELETE', `${FLOWCONTROL}/flowschemas/${names.fs}`).catch(() => undefined);
      await kubeRequest(kc, 'DELETE', `${FLOWCONTROL}/prioritylevelconfigurations/${names.pl}`).catch(() => undefined);
    },
  };
}

/** The agent's writes in the operations' namespace answered 500 by a failing admission webhook while it holds. */
export function webhookFault(): Fault {
  let n = 0;
  let name = '';
  let bitAfter = NaN;
  let probes = 0;
  let before = 0;
  /** A dry-run create as the agent: admission runs (webhooks declaring no side effects), nothing is stored. */
  const dryRunAsAgent = async (rig: FaultRig) =>
    (
      await kubeFetch(rig.agentKubeConfig(), 'POST', `/api/v1/namespaces/${rig.namespaces[0]}/configmaps?dryRun=All`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'faults-webhook-probe' },
      })
    ).status;
  return {
    id: 'webhook-500:kube-apiserver',
    fault: '500 from a failing webhook 8 s',
    target: 'kube-apiserver (agent’s writes)',
    needs: {},
    holdMs: 8_000,
    inject: async (rig) => {
      const id = identity(rig);
      const kc = rig.kubeConfig();
      n += 1;
      name = `faults-refuse-${rig.namespaces[0]}-${n}`;
      before = metricSum(await metrics(rig), REFUSED, { name: WEBHOOK });
      // A port nothing listens on: the API server's call is refused at once.
      const port = await freePort();
      await kubeRequest(kc, 'POST', `${ADMISSION}/validatingwebhookconfigurations`, {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name },
        webhooks: [
          {
            name: WEBHOOK,
            clientConfig: { url: `https://127.0.0.1:${port}/validate` },
            rules: [
              {
                operations: ['CREATE', 'UPDATE'],
                apiGroups: ['', WIDGET_GROUP],
                apiVersions: ['v1'],
                resources: ['configmaps', 'widgets'],
                scope: 'Namespaced',
              },
            ],
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': rig.namespaces[0] } },
            // The agent's writes only: the churn (as the admin) goes on.
            matchConditions: [
              {
                name: 'agent',
                expression: `request.userInfo.username == "system:serviceaccount:${id.namespace}:${id.serviceAccount}"`,
              },
            ],
            failurePolicy: 'Fail',
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
            timeoutSeconds: 2,
          },
        ],
      });
      probes = 0;
      bitAfter = await until(async () => {
        const s = await dryRunAsAgent(rig);
        if (s === 500) probes += 1;
        return s === 500;
      }, 'the API server to answer the agent’s writes with 500');
    },
    observe: async (rig) => {
      const refused = metricSum(await metrics(rig), REFUSED, { name: WEBHOOK }) - before;
      return {
        bit: refused - probes > 0,
        note:
          `in force ${bitAfter} ms after the webhook was created; ${refused - probes} of the agent's writes answered ` +
          `500 (apiserver_admission_webhook_rejection_count{name="${WEBHOOK}"}, less ${probes} probe)`,
      };
    },
    recover: async (rig) => {
      const kc = rig.kubeConfig();
      await kubeRequest(kc, 'DELETE', `${ADMISSION}/validatingwebhookconfigurations/${name}`).catch(() => undefined);
      await until(async () => (await dryRunAsAgent(rig)) < 300, 'the agent’s writes to be admitted again');
    },
  };
}
