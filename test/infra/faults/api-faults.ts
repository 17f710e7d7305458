/**
 * Faults the API server itself answers with, aimed at the rig's agent only (its ServiceAccount; the churn and the
 * checker, as the admin, go on unharmed):
 *
 * - `apf-429`: API Priority and Fairness puts the agent's requests in a priority level of its own with no shares
 *   and no borrowing (nominalConcurrencyShares 0, limitResponse Reject): one seat, since the API server gives no
 *   level less, and every request that finds it taken gets 429. The agent's connections are dropped as it begins,
 *   so all its watches restart at once against that seat (watches already open would not notice: APF holds a
 *   seat only while a watch starts).
 * - `webhook-500`: a validating admission webhook with failurePolicy Fail whose URL refuses connections, matching the
 *   agent's creates and updates of ConfigMaps and Widgets in the operations' namespace: the API server answers 500
 *   InternalError ("failed calling webhook") and writes nothing.
 *
 * Each waits until a probe request as the agent shows the configuration in force (the API server applies it from
 * its informers, a moment later); the counts come from the API server's /metrics.
 */
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

/** The agent's requests rejected with 429 by API Priority and Fairness while it holds. */
export function apfFault(): Fault {
  let n = 0;
  let names = { pl: '', fs: '' };
  let inForceAfter = NaN;
  let before = 0;
  /** A list as the agent; APF names the FlowSchema that classified it in a response header. */
  const listAsAgent = (rig: FaultRig) =>
    kubeFetch(rig.agentKubeConfig(), 'GET', `/api/v1/namespaces/${rig.namespaces[0]}/configmaps?limit=1`);
  return {
    id: 'apf-429:kube-apiserver',
    fault: '429 from APF 8 s (agent held to 1 seat, watches restarted)',
    target: 'kube-apiserver (agent’s flow)',
    needs: {},
    holdMs: 8_000,
    inject: async (rig) => {
      const id = identity(rig);
      const kc = rig.kubeConfig();
      n += 1;
      names = { pl: `faults-jail-${n}`, fs: `faults-agent-jail-${n}` };
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
      const fs = await kubeRequest<{ metadata: { uid: string } }>(kc, 'POST', `${FLOWCONTROL}/flowschemas`, {
        apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
        kind: 'FlowSchema',
        metadata: { name: names.fs },
        spec: {
          priorityLevelConfiguration: { name: names.pl },
          // Ahead of every suggested schema but `exempt` (1) and `probes` (2).
          matchingPrecedence: 10,
          distinguisherMethod: { type: 'ByUser' },
          rules: [
            {
              subjects: [
                { kind: 'ServiceAccount', serviceAccount: { name: id.serviceAccount, namespace: id.namespace } },
              ],
              resourceRules: [
                { verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] },
              ],
              nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
            },
          ],
        },
      });
      inForceAfter = await until(async () => {
        const r = await listAsAgent(rig);
        return r.status === 429 || r.headers['x-kubernetes-pf-flowschema-uid'] === fs.metadata.uid;
      }, 'the agent’s requests to be classified into the jail');
      // One seat holds a client that makes one request at a time; one that starts many at once does not. Dropping
      // the agent's connections makes it restart every watch together, as after an API server restart.
      await rig.toxiproxy.setEnabled('apiserver', false);
      await rig.toxiproxy.setEnabled('apiserver', true);
    },
    observe: async (rig) => {
      const rejected = metricSum(await metrics(rig), REJECTED, { flow_schema: names.fs }) - before;
      return {
        bit: rejected > 0,
        note:
          `in force ${inForceAfter} ms after the FlowSchema was created; ${rejected} of the agent's requests ` +
          `rejected with 429 (apiserver_flowcontrol_rejected_requests_total{flow_schema="${names.fs}"})`,
      };
    },
    recover: async (rig) => {
      const kc = rig.kubeConfig();
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
