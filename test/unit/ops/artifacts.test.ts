/**
 * A manifest's artifacts (GET /manifests `artifacts`, what Find Artifacts From Resource outputs) as Clouddriver's
 * handlers list them through their Replacers (ArtifactReplacer.findAll): which kinds carry which artifacts, in which
 * order, serialised as kork Artifacts without nulls. Expected values are written from Clouddriver's Replacer paths
 * and its NON_NULL object mapper, not from this code.
 */
import { describe, expect, it } from 'vitest';
import { findArtifacts, type KubeObject } from '../../../src/shared/ops/index.js';
import { korkArtifact } from '../../infra/records.js';

const artifact = korkArtifact;

const podSpec = {
  initContainers: [{ name: 'migrate', image: 'localhost:5000/migrate' }],
  containers: [
    {
      name: 'web',
      image: 'ghcr.io/acme/web:1.4.2',
      envFrom: [{ configMapRef: { name: 'web-env' } }, { secretRef: { name: 'web-env-secret' } }],
      env: [
        { name: 'A', valueFrom: { configMapKeyRef: { name: 'web-keys', key: 'a' } } },
        { name: 'B', valueFrom: { secretKeyRef: { name: 'web-key-secret', key: 'b' } } },
        { name: 'C', value: 'plain' },
      ],
    },
    { name: 'sidecar', image: 'registry.example.com:8443/proxy@sha256:abc' },
  ],
  volumes: [
    { name: 'config', configMap: { name: 'web-config' } },
    { name: 'tls', secret: { secretName: 'web-tls' } },
    {
      name: 'all',
      projected: { sources: [{ configMap: { name: 'web-projected' } }, { secret: { name: 'web-projected-secret' } }] },
    },
  ],
};

const workload = (kind: string, spec: object): KubeObject =>
  ({ apiVersion: 'apps/v1', kind, metadata: { name: 'web', namespace: 'shop' }, spec }) as KubeObject;

describe('manifest artifacts (Clouddriver handlers’ Replacers)', () => {
  it('lists a workload’s images, then ConfigMaps and Secrets in the replacers’ order, without location', () => {
    expect(findArtifacts(workload('Deployment', { template: { spec: podSpec } }))).toEqual([
      artifact('docker/image', 'ghcr.io/acme/web', 'ghcr.io/acme/web:1.4.2'),
      artifact('docker/image', 'registry.example.com:8443/proxy', 'registry.example.com:8443/proxy@sha256:abc'),
      // Kept on purpose: Clouddriver names this one "localhost" (it cuts at the last colon, port or tag).
      artifact('docker/image', 'localhost:5000/migrate', 'localhost:5000/migrate'),
      artifact('kubernetes/configMap', 'web-config'),
      artifact('kubernetes/secret', 'web-tls'),
      artifact('kubernetes/configMap', 'web-projected'),
      artifact('kubernetes/secret', 'web-projected-secret'),
      artifact('kubernetes/configMap', 'web-env'),
      artifact('kubernetes/secret', 'web-env-secret'),
      artifact('kubernetes/configMap', 'web-keys'),
      artifact('kubernetes/secret', 'web-key-secret'),
    ]);
  });

  it('finds a CronJob’s through its job template, and lists a name once', () => {
    const spec = {
      containers: [
        { name: 'a', image: 'busybox:1.36' },
        { name: 'b', image: 'busybox:1.36' },
      ],
    };
    const cron = workload('CronJob', { jobTemplate: { spec: { template: { spec } } } });
    expect(findArtifacts(cron)).toEqual([artifact('docker/image', 'busybox', 'busybox:1.36')]);
  });

  it('lists a Pod’s container images only (Clouddriver’s Pod handler has the image replacer alone)', () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: podSpec } as KubeObject;
    expect(findArtifacts(pod)).toEqual([
      artifact('docker/image', 'ghcr.io/acme/web', 'ghcr.io/acme/web:1.4.2'),
      artifact('docker/image', 'registry.example.com:8443/proxy', 'registry.example.com:8443/proxy@sha256:abc'),
    ]);
  });

  it('lists the Deployment or ReplicaSet an HPA scales, and nothing for another target', () => {
    const hpa = (kind: string) =>
      ({
        apiVersion: 'autoscaling/v2',
        kind: 'HorizontalPodAutoscaler',
        metadata: { name: 'web' },
        spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind, name: 'web' }, maxReplicas: 3 },
      }) as KubeObject;
    expect(findArtifacts(hpa('Deployment'))).toEqual([artifact('kubernetes/deployment', 'web')]);
    expect(findArtifacts(hpa('ReplicaSet'))).toEqual([artifact('kubernetes/replicaSet', 'web')]);
    expect(findArtifacts(hpa('StatefulSet'))).toEqual([]);
  });

  it('lists nothing for kinds whose handler has no replacer, pod template or not', () => {
    expect(
      findArtifacts({ apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: {} } as KubeObject),
    ).toEqual([]);
    const rc = {
      apiVersion: 'v1',
      kind: 'ReplicationController',
      metadata: { name: 'r' },
      spec: { template: { spec: podSpec } },
    };
    expect(findArtifacts(rc as KubeObject)).toEqual([]);
  });
});
