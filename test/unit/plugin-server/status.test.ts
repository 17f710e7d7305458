/**
 * Status rules as docs/clouddriver-compatibility.md (Status rules) states them (after Clouddriver's Kubernetes*HandlerTest
 * fixtures, §9.3). Each case is a hand-written manifest and the expected four conditions.
 */
import { describe, expect, it } from 'vitest';
import { manifestStatus } from '../../../src/plugin-server/api/status.js';

const STABLE = {
  stable: { state: true },
  paused: { state: false },
  available: { state: true },
  failed: { state: false },
};
const NONE_REPORTED = {
  stable: { state: false, message: 'No status reported yet' },
  paused: { state: false },
  available: { state: false, message: 'No availability reported' },
  failed: { state: false },
};

function deployment(status: object | undefined, spec: object = { replicas: 3 }, generation = 4) {
  return { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', generation }, spec, status };
}
const settled = { observedGeneration: 4, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3 };

describe('Deployment status', () => {
  it.each([
    ['stable', settled, STABLE],
    ['no status', undefined, NONE_REPORTED],
    [
      'old generation stops further checks',
      { ...settled, observedGeneration: 3, updatedReplicas: 0 },
      {
        ...STABLE,
        stable: { state: false, message: 'Waiting for status generation to match updated object generation' },
      },
    ],
    [
      'missing observedGeneration counts as old',
      { replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3 },
      {
        ...STABLE,
        stable: { state: false, message: 'Waiting for status generation to match updated object generation' },
      },
    ],
    [
      'awaiting updated replicas',
      { ...settled, updatedReplicas: 1 },
      { ...STABLE, stable: { state: false, message: 'Waiting for all replicas to be updated' } },
    ],
    [
      'awaiting termination of old replicas',
      { ...settled, replicas: 4 },
      { ...STABLE, stable: { state: false, message: 'Waiting for old replicas to finish termination' } },
    ],
    [
      'awaiting available replicas',
      { ...settled, availableReplicas: 2 },
      { ...STABLE, stable: { state: false, message: 'Waiting for all replicas to be available' } },
    ],
    [
      'awaiting ready replicas',
      { ...settled, readyReplicas: 2 },
      { ...STABLE, stable: { state: false, message: 'Waiting for all replicas to be ready' } },
    ],
    [
      'paused while awaiting updated replicas',
      {
        ...settled,
        updatedReplicas: 1,
        conditions: [
          { type: 'Progressing', status: 'Unknown', reason: 'DeploymentPaused', message: 'Deployment is paused' },
        ],
      },
      {
        ...STABLE,
        stable: { state: false, message: 'Waiting for all replicas to be updated' },
        paused: { state: true, message: 'Deployment is paused' },
      },
    ],
    [
      'Available=False makes it unstable and unavailable with the condition message',
      {
        ...settled,
        conditions: [{ type: 'Available', status: 'False', message: 'Deployment does not have minimum availability.' }],
      },
      {
        ...STABLE,
        stable: { state: false, message: 'Deployment does not have minimum availability.' },
        available: { state: false, message: 'Deployment does not have minimum availability.' },
      },
    ],
    [
      'a replica check message overrides the Available=False message on stable only',
      {
        ...settled,
        availableReplicas: 1,
        conditions: [{ type: 'Available', status: 'False', message: 'Deployment does not have minimum availability.' }],
      },
      {
        ...STABLE,
        stable: { state: false, message: 'Waiting for all replicas to be available' },
        available: { state: false, message: 'Deployment does not have minimum availability.' },
      },
    ],
    [
      'progress deadline exceeded fails it',
      {
        ...settled,
        availableReplicas: 1,
        conditions: [
          { type: 'Available', status: 'False', message: 'Deployment does not have minimum availability.' },
          {
            type: 'Progressing',
            status: 'False',
            reason: 'ProgressDeadlineExceeded',
            message: 'ReplicaSet "web-1" has timed out progressing.',
          },
        ],
      },
      {
        stable: { state: false, message: 'Waiting for all replicas to be available' },
        paused: { state: false },
        available: { state: false, message: 'Deployment does not have minimum availability.' },
        failed: { state: true, message: 'Deployment exceeded its progress deadline' },
      },
    ],
  ])('%s', (_name, status, expected) => {
    expect(manifestStatus('apps', 'Deployment', deployment(status))).toEqual(expected);
  });

  it('zero desired replicas with nothing reported is stable', () => {
    expect(manifestStatus('apps', 'Deployment', deployment({ observedGeneration: 4 }, { replicas: 0 }))).toEqual(
      STABLE,
    );
  });
});

describe('ReplicaSet status', () => {
  const rs = (status: object | undefined, generation = 2) => ({
    metadata: { name: 'web-v001', generation },
    spec: { replicas: 2 },
    status,
  });
  const ok = { observedGeneration: 2, replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 2, availableReplicas: 2 };
  it('stable', () => expect(manifestStatus('apps', 'ReplicaSet', rs(ok))).toEqual(STABLE));
  it('no status', () => expect(manifestStatus('apps', 'ReplicaSet', rs(undefined))).toEqual(NONE_REPORTED));
  it('replica checks set unstable and unavailable, and come before the generation check', () => {
    const m = 'Waiting for all replicas to be ready';
    expect(manifestStatus('apps', 'ReplicaSet', rs({ ...ok, readyReplicas: 1, observedGeneration: 1 }))).toEqual({
      ...STABLE,
      stable: { state: false, message: m },
      available: { state: false, message: m },
    });
    const f = 'Waiting for all replicas to be fully-labeled';
    expect(manifestStatus('apps', 'ReplicaSet', rs({ ...ok, fullyLabeledReplicas: 0 }))).toMatchObject({
      stable: { state: false, message: f },
    });
  });
  it('generation mismatch', () =>
    expect(manifestStatus('apps', 'ReplicaSet', rs({ ...ok, observedGeneration: 1 }))).toEqual({
      ...STABLE,
      stable: { state: false, message: 'Waiting for replicaset spec update to be observed' },
    }));
});

describe('StatefulSet status', () => {
  const sts = (status: object | undefined, strategy: object = { type: 'RollingUpdate' }) => ({
    metadata: { name: 'db', generation: 1 },
    spec: { replicas: 3, updateStrategy: strategy },
    status,
  });
  const ok = {
    observedGeneration: 1,
    replicas: 3,
    readyReplicas: 3,
    currentReplicas: 3,
    currentRevision: 'r1',
    updateRevision: 'r1',
  };
  const unstable = (message: string) => ({ ...STABLE, stable: { state: false, message } });
  it('OnDelete is always stable, even without status', () =>
    expect(manifestStatus('apps', 'StatefulSet', sts(undefined, { type: 'OnDelete' }))).toEqual(STABLE));
  it('stable', () => expect(manifestStatus('apps', 'StatefulSet', sts(ok))).toEqual(STABLE));
  it('no status', () => expect(manifestStatus('apps', 'StatefulSet', sts(undefined))).toEqual(NONE_REPORTED));
  it.each([
    [{ ...ok, replicas: 2 }, 'Waiting for at least the desired replica count to be met'],
    [{ ...ok, readyReplicas: 2 }, 'Waiting for all updated replicas to be ready'],
    [{ ...ok, currentReplicas: 2 }, 'Waiting for all updated replicas to be scheduled'],
    [{ ...ok, updateRevision: 'r2' }, 'Waiting for the updated revision to match the current revision'],
  ])('unstable: %j', (status, message) =>
    expect(manifestStatus('apps', 'StatefulSet', sts(status))).toEqual(unstable(message)),
  );
  it('partitioned roll outs', () => {
    const strategy = { type: 'RollingUpdate', rollingUpdate: { partition: 1 } };
    expect(manifestStatus('apps', 'StatefulSet', sts({ ...ok, updatedReplicas: 1 }, strategy))).toEqual(
      unstable('Waiting for partitioned roll out to finish'),
    );
    expect(
      manifestStatus('apps', 'StatefulSet', sts({ ...ok, updatedReplicas: 2, updateRevision: 'r2' }, strategy)),
    ).toEqual({
      ...STABLE,
      stable: { state: true, message: 'Partitioned roll out complete' },
    });
  });
});

describe('DaemonSet status', () => {
  const ds = (status: object | undefined, type = 'RollingUpdate') => ({
    metadata: { name: 'agent', generation: 1 },
    spec: { updateStrategy: { type } },
    status,
  });
  const ok = {
    observedGeneration: 1,
    desiredNumberScheduled: 3,
    currentNumberScheduled: 3,
    updatedNumberScheduled: 3,
    numberAvailable: 3,
    numberReady: 3,
  };
  it('stable, no status, OnDelete', () => {
    expect(manifestStatus('apps', 'DaemonSet', ds(ok))).toEqual(STABLE);
    expect(manifestStatus('apps', 'DaemonSet', ds(undefined))).toEqual(NONE_REPORTED);
    expect(manifestStatus('apps', 'DaemonSet', ds({ ...ok, numberReady: 0 }, 'OnDelete'))).toEqual(STABLE);
  });
  it.each([
    [{ currentNumberScheduled: 2 }, 'Waiting for all replicas to be scheduled'],
    [{ updatedNumberScheduled: 2 }, 'Waiting for all updated replicas to be scheduled'],
    [{ numberAvailable: 2 }, 'Waiting for all replicas to be available'],
    [{ numberReady: 2 }, 'Waiting for all replicas to be ready'],
    [{ observedGeneration: 0 }, 'Waiting for status generation to match updated object generation'],
  ])('unstable: %j', (patch, message) =>
    expect(manifestStatus('apps', 'DaemonSet', ds({ ...ok, ...patch }))).toEqual({
      ...STABLE,
      stable: { state: false, message },
    }),
  );
});

describe('Job, Pod, HPA, CronJob and kinds without rules', () => {
  it('Job', () => {
    const job = (status: object | undefined, completions?: number) => ({
      spec: completions ? { completions } : {},
      status,
    });
    expect(manifestStatus('batch', 'Job', job(undefined))).toEqual(NONE_REPORTED);
    expect(manifestStatus('batch', 'Job', job({ succeeded: 1 }))).toEqual(STABLE);
    expect(manifestStatus('batch', 'Job', job({ active: 1 }))).toEqual({
      ...STABLE,
      stable: { state: false, message: 'Waiting for jobs to finish' },
    });
    expect(manifestStatus('batch', 'Job', job({ succeeded: 1 }, 3))).toMatchObject({ stable: { state: false } });
    // A failed job is failed while stable stays true.
    expect(
      manifestStatus(
        'batch',
        'Job',
        job({
          failed: 6,
          conditions: [{ type: 'Failed', status: 'True', message: 'Job has reached the specified backoff limit' }],
        }),
      ),
    ).toEqual({ ...STABLE, failed: { state: true, message: 'Job has reached the specified backoff limit' } });
  });
  it('Pod', () => {
    const pod = (phase?: string) => ({ status: phase ? { phase } : {} });
    const bad = (message: string) => ({
      ...STABLE,
      stable: { state: false, message },
      available: { state: false, message },
    });
    expect(manifestStatus('', 'Pod', {})).toEqual(NONE_REPORTED);
    expect(manifestStatus('', 'Pod', pod('Running'))).toEqual(STABLE);
    expect(manifestStatus('', 'Pod', pod('Succeeded'))).toEqual(STABLE);
    expect(manifestStatus('', 'Pod', pod('Pending'))).toEqual(bad('Pod is pending'));
    // Not reported as failed: Clouddriver only marks it unstable and unavailable.
    expect(manifestStatus('', 'Pod', pod('Failed'))).toEqual(bad('Pod has failed'));
    expect(manifestStatus('', 'Pod', pod('Unknown'))).toEqual(bad('Pod phase is unknown'));
    expect(manifestStatus('', 'Pod', pod())).toEqual(bad('Pod phase is unknown'));
  });
  it('HorizontalPodAutoscaler', () => {
    expect(manifestStatus('autoscaling', 'HorizontalPodAutoscaler', {})).toEqual(NONE_REPORTED);
    expect(
      manifestStatus('autoscaling', 'HorizontalPodAutoscaler', { status: { currentReplicas: 2, desiredReplicas: 2 } }),
    ).toEqual(STABLE);
    expect(
      manifestStatus('autoscaling', 'HorizontalPodAutoscaler', { status: { currentReplicas: 1, desiredReplicas: 3 } }),
    ).toEqual({
      ...STABLE,
      stable: { state: false, message: 'Waiting for HPA to complete a scale up, current: 1 desired: 3' },
    });
    expect(
      manifestStatus('autoscaling', 'HorizontalPodAutoscaler', { status: { currentReplicas: 3, desiredReplicas: 1 } }),
    ).toMatchObject({
      stable: { state: false, message: 'Waiting for HPA to complete a scale down, current: 3 desired: 1' },
    });
  });
  it('CronJob and everything else', () => {
    expect(manifestStatus('batch', 'CronJob', {})).toEqual(NONE_REPORTED);
    expect(manifestStatus('batch', 'CronJob', { status: {} })).toEqual(STABLE);
    for (const [g, k] of [
      ['', 'Service'],
      ['', 'ConfigMap'],
      ['', 'Secret'],
      ['networking.k8s.io', 'Ingress'],
      ['stable.example.com', 'CronTab'],
    ]) {
      expect(manifestStatus(g!, k!, {})).toEqual(STABLE);
    }
  });
});
