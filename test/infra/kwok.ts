/**
 * One fake node for the shared control plane: kwok (built by tools/k8s) manages a Node object, moves the pods bound
 * to it through their lifecycle (Running, and Succeeded for Job pods) and serves the kubelet's log endpoint from
 * files, so `pods/log` through the API server answers real text. No scheduler runs here: pods name the node in
 * `spec.nodeName`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { run } from './exec.js';
import { kubectl, testEnv, toolPath } from './index.js';
import { freePort } from './ports.js';
import { ServerProcess } from './processes-group.js';
import { waitFor } from './wait.js';

export interface KwokLogs {
  namespace: string;
  /** Containers whose log is `text`, in every pod of the namespace. */
  containers: string[];
  text: string;
}

/**
 * kwok runs nothing by itself: Stages say how objects move. Ours, written for these tests: the node becomes Ready
 * and names the address and port the API server reaches its "kubelet" on; a pod bound to it starts Running; a Job's
 * pod then completes with exit code 0, or fails with the exit code in its `exitcode` label when it has one; a pod
 * being deleted goes at once (no kubelet would confirm it otherwise).
 */
const STAGES = [
  {
    name: 'test-node-ready',
    resourceRef: { apiGroup: 'v1', kind: 'Node' },
    selector: {
      matchExpressions: [
        { key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: 'NotIn', values: ['True'] },
      ],
    },
    next: {
      statusTemplate: [
        'conditions:',
        '- type: Ready',
        '  status: "True"',
        '  reason: KubeletReady',
        '  message: kwok test node',
        '  lastHeartbeatTime: {{ Now | Quote }}',
        '  lastTransitionTime: {{ Now | Quote }}',
        'addresses:',
        '- type: InternalIP',
        '  address: {{ NodeIP | Quote }}',
        'daemonEndpoints:',
        '  kubeletEndpoint:',
        '    Port: {{ NodePort }}',
        'allocatable: {cpu: "32", memory: 64Gi, pods: "110"}',
        'capacity: {cpu: "32", memory: 64Gi, pods: "110"}',
        'phase: Running',
        '',
      ].join('\n'),
    },
  },
  {
    name: 'test-pod-running',
    resourceRef: { apiGroup: 'v1', kind: 'Pod' },
    selector: {
      matchExpressions: [
        { key: '.metadata.deletionTimestamp', operator: 'DoesNotExist' },
        { key: '.status.phase', operator: 'In', values: ['Pending'] },
      ],
    },
    next: {
      statusTemplate: [
        'phase: Running',
        'startTime: {{ Now | Quote }}',
        'conditions:',
        '- type: Ready',
        '  status: "True"',
        '  lastTransitionTime: {{ Now | Quote }}',
        'containerStatuses:',
        '{{ range .spec.containers }}',
        '- name: {{ .name | Quote }}',
        '  image: {{ .image | Quote }}',
        '  ready: true',
        '  started: true',
        '  restartCount: 0',
        '  state:',
        '    running:',
        '      startedAt: {{ Now | Quote }}',
        '{{ end }}',
        '',
      ].join('\n'),
    },
  },
  {
    name: 'test-job-pod-complete',
    resourceRef: { apiGroup: 'v1', kind: 'Pod' },
    selector: {
      matchExpressions: [
        { key: '.metadata.deletionTimestamp', operator: 'DoesNotExist' },
        { key: '.status.phase', operator: 'In', values: ['Running'] },
        { key: '.metadata.ownerReferences.[].kind', operator: 'In', values: ['Job'] },
        { key: '.metadata.labels.exitcode', operator: 'DoesNotExist' },
      ],
    },
    next: {
      statusTemplate: [
        'phase: Succeeded',
        'conditions:',
        '- type: Ready',
        '  status: "False"',
        '  reason: PodCompleted',
        '  lastTransitionTime: {{ Now | Quote }}',
        'containerStatuses:',
        '{{ range .spec.containers }}',
        '- name: {{ .name | Quote }}',
        '  image: {{ .image | Quote }}',
        '  ready: false',
        '  started: false',
        '  restartCount: 0',
        '  state:',
        '    terminated:',
        '      exitCode: 0',
        '      reason: Completed',
        '      startedAt: {{ Now | Quote }}',
        '      finishedAt: {{ Now | Quote }}',
        '{{ end }}',
        '',
      ].join('\n'),
    },
  },
  {
    name: 'test-pod-fail',
    resourceRef: { apiGroup: 'v1', kind: 'Pod' },
    selector: {
      matchExpressions: [
        { key: '.metadata.deletionTimestamp', operator: 'DoesNotExist' },
        { key: '.status.phase', operator: 'In', values: ['Running'] },
        { key: '.metadata.labels.exitcode', operator: 'Exists' },
      ],
    },
    next: {
      statusTemplate: [
        'phase: Failed',
        'conditions:',
        '- type: Ready',
        '  status: "False"',
        '  reason: PodFailed',
        '  lastTransitionTime: {{ Now | Quote }}',
        'containerStatuses:',
        '{{ $code := .metadata.labels.exitcode }}',
        '{{ range .spec.containers }}',
        '- name: {{ .name | Quote }}',
        '  image: {{ .image | Quote }}',
        '  ready: false',
        '  started: false',
        '  restartCount: 0',
        '  state:',
        '    terminated:',
        '      exitCode: {{ $code }}',
        '      reason: Error',
        '      message: the test asked for exit code {{ $code }}',
        '      startedAt: {{ Now | Quote }}',
        '      finishedAt: {{ Now | Quote }}',
        '{{ end }}',
        '',
      ].join('\n'),
    },
  },
  {
    name: 'test-pod-delete',
    resourceRef: { apiGroup: 'v1', kind: 'Pod' },
    selector: { matchExpressions: [{ key: '.metadata.deletionTimestamp', operator: 'Exists' }] },
    next: { delete: true },
  },
].map(({ name, ...spec }) => ({ apiVersion: 'kwok.x-k8s.io/v1alpha1', kind: 'Stage', metadata: { name }, spec }));

/** Log text as a kubelet stores container logs (the CRI format kwok reads back): `<time> stdout F <line>`. */
function criLog(text: string): string {
  const time = new Date().toISOString();
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  return lines.map((line) => `${time} stdout F ${line}\n`).join('');
}

export class KwokNode {
  private constructor(
    readonly name: string,
    private readonly proc: ServerProcess,
  ) {}

  static async start(opts: { dir: string; name: string; logs: KwokLogs[] }): Promise<KwokNode> {
    mkdirSync(opts.dir, { recursive: true });
    const port = await freePort();
    // The API server reaches the "kubelet" over HTTPS and, with no --kubelet-certificate-authority, does not verify
    // it: a throwaway self-signed certificate is enough.
    const cert = join(opts.dir, 'kwok.crt');
    const key = join(opts.dir, 'kwok.key');
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      `/CN=${opts.name}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ]);
    const docs = opts.logs.map((l, i) => {
      const file = join(opts.dir, `logs-${i}.log`);
      writeFileSync(file, criLog(l.text));
      return stringify({
        apiVersion: 'kwok.x-k8s.io/v1alpha1',
        kind: 'ClusterLogs',
        metadata: { name: `logs-${i}` },
        spec: { selector: { matchNamespaces: [l.namespace] }, logs: [{ containers: l.containers, logsFile: file }] },
      });
    });
    const config = join(opts.dir, 'kwok.yaml');
    writeFileSync(config, [...STAGES.map((st) => stringify(st)), ...docs].join('---\n'));
    await kubectl(['apply', '-f', '-'], {
      input: stringify({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: opts.name, annotations: { 'kwok.x-k8s.io/node': 'fake' }, labels: { type: 'kwok' } },
      }),
    });
    const proc = ServerProcess.start(
      `kwok ${opts.name}`,
      toolPath('kwok'),
      [
        `--kubeconfig=${testEnv().kubeconfig}`,
        `--manage-single-node=${opts.name}`,
        `--config=${config}`,
        `--server-address=127.0.0.1:${port}`,
        '--node-ip=127.0.0.1',
        `--node-port=${port}`,
        `--tls-cert-file=${cert}`,
        `--tls-private-key-file=${key}`,
        '--node-lease-duration-seconds=40',
      ],
      join(opts.dir, `kwok-${opts.name}.log`),
    );
    const node = new KwokNode(opts.name, proc);
    // A kwok that exits ends the wait at once; assertRunning then reports its log.
    await waitFor(`kwok node ${opts.name} Ready`, async () => {
      if (!proc.running) return true;
      const r = await kubectl(
        ['get', 'node', opts.name, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'],
        { allowFail: true },
      );
      return r.stdout === 'True';
    });
    proc.assertRunning();
    return node;
  }

  async stop(): Promise<void> {
    await this.proc.stop();
    await kubectl(['delete', 'node', this.name, '--wait=false'], { allowFail: true });
  }
}
