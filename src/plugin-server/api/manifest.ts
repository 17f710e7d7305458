import type { CachedObject } from '../cache/store.js';
import { toResource, type Obj } from '../views/resource.js';
import { manifestStatus, type ManifestStatus } from './status.js';
import { findArtifacts, type Artifact, type KubeObject, type Moniker } from '../../shared/ops/index.js';

/** Clouddriver's KubernetesManifestContainer (docs/clouddriver-compatibility.md, Manifests). */
export interface ManifestContainer {
  account: string;
  name: string;
  location: string;
  moniker: Moniker;
  manifest: Obj;
  status: ManifestStatus;
  artifacts: Artifact[];
  events: unknown[];
  warnings: unknown[];
  metrics: unknown[];
}

export function manifestContainer(o: CachedObject): ManifestContainer {
  // One parse, as the views make it (apiVersion and kind set from the cache: Secrets come as metadata only).
  const r = toResource(o);
  return {
    account: o.account,
    name: r.fullName,
    location: o.namespace,
    moniker: r.moniker,
    manifest: r.manifest,
    status: manifestStatus(o.group, o.kind, r.manifest),
    artifacts: findArtifacts(r.manifest as KubeObject),
    events: [],
    warnings: [],
    metrics: [],
  };
}
