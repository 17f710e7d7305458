import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ScaleAgentError } from '../../shared/errors.js';
import { artifactKey, bindArtifacts, unboundArtifacts } from '../../shared/ops/artifacts.js';
import {
  deployPriority,
  fullResourceName,
  hasCapability,
  knownKindOf,
  parseFullResourceName,
} from '../../shared/ops/kinds.js';
import { deployResult, type OperationResultObject } from '../../shared/ops/results.js';
import {
  ANNOTATIONS,
  annotateManifest,
  artifactOf,
  loadBalancersOf,
  strategyOf,
  versionOfName,
} from '../../shared/ops/spinnaker.js';
import type { Artifact, DeployPayload, KubeObject, Moniker } from '../../shared/ops/types.js';
import { submit, submitModeOf } from './apply.js';
import { collectionPath, intentFor } from '../kube/resources.js';
import type { DiscoveredResource as OpResource } from '../kube/discovery.js';
import { getObject, note, withoutManagedFields, type OpContext } from './context.js';
import { markCreation } from './once-in-cluster.js';

interface Prepared {
  manifest: KubeObject;
  artifact: Artifact;
  forceCreate: boolean;
}

/**
 * deployManifest as Clouddriver runs it: sort by deploy priority, bind artifacts, pick the `-vNNN` version for
 * versioned kinds, annotate with moniker and artifact, attach load balancers, then submit in order. Everything
 * that can fail without touching the cluster (unknown kinds, unbound required artifacts, traffic conflicts) fails
 * before the first write.
 */
export async function deployManifests(
  ctx: OpContext,
  p: DeployPayload,
  forceCreate = false,
): Promise<OperationResultObject> {
  note(ctx, `Beginning deployment of manifests in account ${ctx.account} ...`);
  const input = p.manifests.map((m, i) => ({ m: structuredClone(m), i }));
  input.sort(
    (a, b) => deployPriority(a.m.apiVersion, a.m.kind) - deployPriority(b.m.apiVersion, b.m.kind) || a.i - b.i,
  );
  const manifests = input.map((x) => x.m);
  note(ctx, `Deploy order is: ${manifests.map(fullResourceName).join(', ')}`);
  const crdScopes = customKindsDefinedIn(manifests);

  const artifacts = new Map<string, Artifact>();
  if (p.enableArtifactBinding) {
    for (const a of [...p.requiredArtifacts, ...p.optionalArtifacts])
      if (!artifacts.has(artifactKey(a))) artifacts.set(artifactKey(a), a);
  }
  const bound = new Map<string, Artifact>();
  const prepared: Prepared[] = [];
  for (const original of manifests) {
    const namespaced = await namespacedOf(ctx, original, crdScopes);
    const m = original;
    if (namespaced) m.metadata.namespace = p.namespaceOverride || m.metadata.namespace || ctx.defaultNamespace;
    else delete m.metadata.namespace;
    const fullName = fullResourceName(m);

    let manifest = m;
    if (p.enableArtifactBinding) {
      const b = bindArtifacts(m, [...artifacts.values()]);
      manifest = b.manifest;
      for (const a of b.bound) bound.set(artifactKey(a), a);
    }
    const strategy = strategyOf(manifest);
    const known = knownKindOf(manifest.apiVersion, manifest.kind);
    const baseName = manifest.metadata.name ?? '';
    const versioned = !!baseName && (strategy.versioned ?? p.versioned ?? known?.versioned ?? false);
    const hash = configHash(manifest, p.moniker);
    let version: number | undefined;
    if (versioned) {
      const existing = await existingVersions(ctx, manifest, baseName, crdScopes);
      version = pickVersion(existing, hash, manifest);
      note(
        ctx,
        `Versioned ${fullName}: ${existing.length} existing version(s), deploying v${String(version).padStart(3, '0')}`,
      );
      if (strategy.useSourceCapacity && known?.capabilities.includes('scale'))
        await useSourceCapacity(ctx, manifest, existing);
    }
    const moniker: Moniker = { ...p.moniker };
    if (version !== undefined) moniker.sequence = version;
    if (!moniker.cluster) moniker.cluster = fullName;
    const artifact = artifactOf(manifest, baseName || (manifest.metadata.generateName ?? ''), ctx.account, version);
    artifacts.set(artifactKey(artifact), artifact);
    annotateManifest(manifest, { moniker, artifact, skipSpecTemplateLabels: p.skipSpecTemplateLabels });
    (manifest.metadata.annotations ??= {})[ANNOTATIONS.configHash] = hash;

    if (known && hasCapability({ name: known.name, known }, 'traffic')) {
      setTrafficAnnotation(manifest, p.services);
      if (p.enableTraffic) await attachLoadBalancers(ctx, manifest, manifests);
    }
    if (version !== undefined) manifest.metadata.name = artifact.reference;
    prepared.push({ manifest, artifact, forceCreate });
  }
  if (p.enableArtifactBinding) {
    const missing = unboundArtifacts(p.requiredArtifacts, [...bound.values()]);
    if (missing.length > 0) {
      throw new ScaleAgentError(
        'INVALID_INPUT',
        `The following required artifacts could not be bound: '${missing.map(artifactKey).join(', ')}'. Check that the Docker image name above matches the name used in the image field of your manifest.`,
      );
    }
  }

  const deployed: KubeObject[] = [];
  for (const [i, item] of prepared.entries()) {
    const r = await resourceFor(ctx, item.manifest, crdScopes);
    note(ctx, `Submitting manifest ${fullResourceName(item.manifest)} to kubernetes master...`);
    // The request's applyMode replaces the account default; a manifest's annotations still win (submitModeOf).
    const mode = submitModeOf(item.manifest, p.applyMode ?? ctx.defaultApplyMode, item.forceCreate);
    // A create repeated after an agent restart would make a second object, or recreate the first (once-in-cluster.ts).
    if (ctx.operationId && (mode.kind === 'create' || mode.kind === 'recreate'))
      markCreation(item.manifest, ctx.operationId, i);
    const live = await submit(ctx, r, item.manifest, mode);
    deployed.push(withoutManagedFields(live));
  }
  note(ctx, `Deploy manifest task completed successfully for all manifests in account ${ctx.account}`);
  return deployResult({
    manifests: deployed,
    createdArtifacts: prepared.map((x, i) => renamedArtifact(x.artifact, deployed[i])),
    boundArtifacts: [...bound.values()],
  });
}

/** generateName objects get their name from the API server; the artifact follows. */
function renamedArtifact(a: Artifact, live: KubeObject | undefined): Artifact {
  const name = live?.metadata.name;
  if (!name || a.reference === name || a.version) return a;
  return { ...a, name, reference: name };
}

/** Custom kinds whose CRD is in this same request: `group/Kind` → namespaced. */
function customKindsDefinedIn(manifests: KubeObject[]): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const m of manifests) {
    if (m.kind !== 'CustomResourceDefinition') continue;
    const spec = m.spec as { group?: string; names?: { kind?: string }; scope?: string } | undefined;
    if (spec?.group && spec.names?.kind) out.set(`${spec.group}/${spec.names.kind}`, spec.scope !== 'Cluster');
  }
  return out;
}

async function namespacedOf(ctx: OpContext, m: KubeObject, crdScopes: Map<string, boolean>): Promise<boolean> {
  const known = knownKindOf(m.apiVersion, m.kind);
  if (known) return known.namespaced;
  const group = m.apiVersion.includes('/') ? m.apiVersion.slice(0, m.apiVersion.indexOf('/')) : '';
  const fromRequest = crdScopes.get(`${group}/${m.kind}`);
  if (fromRequest !== undefined) return fromRequest;
  return (await ctx.discovery.forManifest(m.apiVersion, m.kind, ctx.signal)).namespaced;
}

/**
 * The resource to submit to. A custom resource whose CRD was submitted a moment ago becomes servable only once
 * the CRD is established, so a kind defined in this request is waited for (bounded).
 */
async function resourceFor(ctx: OpContext, m: KubeObject, crdScopes: Map<string, boolean>): Promise<OpResource> {
  const group = m.apiVersion.includes('/') ? m.apiVersion.slice(0, m.apiVersion.indexOf('/')) : '';
  const definedHere = crdScopes.has(`${group}/${m.kind}`);
  const until = Date.now() + ctx.waitTimeoutMs;
  for (;;) {
    try {
      return await ctx.discovery.forManifest(m.apiVersion, m.kind, ctx.signal);
    } catch (e) {
      if (!definedHere || Date.now() > until || ctx.signal.aborted) throw e;
      await sleep(250, undefined, { signal: ctx.signal });
    }
  }
}

interface ExistingVersion {
  name: string;
  version: number;
  hash: string | undefined;
  lastApplied: string | undefined;
}

async function existingVersions(
  ctx: OpContext,
  m: KubeObject,
  baseName: string,
  crdScopes: Map<string, boolean>,
): Promise<ExistingVersion[]> {
  let r: OpResource;
  try {
    r = await ctx.discovery.forManifest(m.apiVersion, m.kind, ctx.signal);
  } catch (e) {
    // A kind whose CRD arrives in this very request has no earlier versions.
    if (crdScopes.size > 0) return [];
    throw e;
  }
  const ns = r.namespaced ? m.metadata.namespace : undefined;
  // Metadata only: versions of Secrets are compared without their data ever reaching the agent.
  const list = await ctx.kube.getJson<{ items?: KubeObject[] }>(collectionPath(r, ns), {
    accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
    signal: ctx.signal,
    intent: intentFor('list', r, ns),
  });
  const out: ExistingVersion[] = [];
  for (const o of list.items ?? []) {
    const name = o.metadata.name ?? '';
    const a = o.metadata.annotations ?? {};
    const byAnnotation = a[ANNOTATIONS.artifactName] === baseName;
    const byName = name.startsWith(`${baseName}-v`) && versionOfName(name) !== undefined;
    if (!byAnnotation && !byName) continue;
    const fromAnnotation = /^v(\d+)$/.exec(a[ANNOTATIONS.artifactVersion] ?? '')?.[1];
    const version = fromAnnotation !== undefined ? Number(fromAnnotation) : versionOfName(name);
    if (version === undefined) continue;
    out.push({ name, version, hash: a[ANNOTATIONS.configHash], lastApplied: a[ANNOTATIONS.lastApplied] });
  }
  return out.sort((x, y) => x.version - y.version);
}

/** Reuse the version whose content is identical (ours by hash, kubectl's by last-applied), else max + 1. */
function pickVersion(existing: ExistingVersion[], hash: string, manifest: KubeObject): number {
  const same =
    existing.find((e) => e.hash === hash) ??
    existing.find((e) => e.lastApplied && sameIgnoringMetadata(e.lastApplied, manifest));
  if (same) return same.version;
  return existing.length === 0 ? 0 : Math.max(...existing.map((e) => e.version)) + 1;
}

function sameIgnoringMetadata(lastApplied: string, manifest: KubeObject): boolean {
  try {
    const { metadata: _a, ...prev } = JSON.parse(lastApplied) as KubeObject;
    const { metadata: _b, ...next } = manifest;
    return stableJson(prev) === stableJson(next);
  } catch {
    return false;
  }
}

function configHash(manifest: KubeObject, moniker: Moniker): string {
  const { sequence: _s, ...m } = moniker;
  const { name: _n, ...metadata } = manifest.metadata;
  return createHash('sha256')
    .update(stableJson({ manifest: { ...manifest, metadata }, moniker: m }))
    .digest('hex')
    .slice(0, 32);
}

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

async function useSourceCapacity(ctx: OpContext, manifest: KubeObject, existing: ExistingVersion[]): Promise<void> {
  const newest = existing[existing.length - 1];
  if (!newest) return;
  const r = await ctx.discovery.forManifest(manifest.apiVersion, manifest.kind, ctx.signal);
  const live = await getObject(ctx, r, manifest.metadata.namespace, newest.name);
  const replicas = (live?.spec as { replicas?: number } | undefined)?.replicas;
  if (typeof replicas === 'number') {
    (manifest.spec as { replicas?: number }).replicas = replicas;
    note(ctx, `Using source capacity ${replicas} from ${newest.name}`);
  }
}

function setTrafficAnnotation(manifest: KubeObject, services: string[]): void {
  if (services.length === 0) return;
  const annotations = (manifest.metadata.annotations ??= {});
  if (ANNOTATIONS.loadBalancers in annotations) {
    const current = loadBalancersOf(manifest);
    if (JSON.stringify(current) === JSON.stringify(services)) return;
    throw new ScaleAgentError(
      'CONFLICT',
      `Manifest already has ${ANNOTATIONS.loadBalancers} annotation set to ${JSON.stringify(current)}. Failed attempting to set it to ${JSON.stringify(services)}.`,
    );
  }
  annotations[ANNOTATIONS.loadBalancers] = JSON.stringify(services);
}

/** Merges each load balancer's selector into the workload's pod-template labels (Clouddriver's Service attach). */
async function attachLoadBalancers(ctx: OpContext, target: KubeObject, request: KubeObject[]): Promise<void> {
  for (const lb of loadBalancersOf(target)) {
    const parsed = parseFullResourceName(lb);
    if (!parsed || parsed.kind.known?.name !== 'service') {
      throw new ScaleAgentError(
        'INVALID_INPUT',
        `Failed to attach load balancer '${lb}'. Load balancers must be specified in the form 'service my-service'.`,
      );
    }
    const ns = target.metadata.namespace;
    let service = request.find(
      (m) => m.kind === 'Service' && m.metadata.name === parsed.name && (m.metadata.namespace ?? ns) === ns,
    );
    if (!service) {
      const r = await ctx.discovery.forKindName('service', ctx.signal);
      service = await getObject(ctx, r, ns, parsed.name);
    }
    if (!service) throw new ScaleAgentError('NOT_FOUND', `Load balancer service ${parsed.name} does not exist`);
    const selector = (service.spec as { selector?: Record<string, string> } | undefined)?.selector ?? {};
    const labels = podLabels(target);
    Object.assign(labels, selector);
    note(ctx, `Attaching load balancer service ${parsed.name} to ${fullResourceName(target)}`);
  }
}

function podLabels(obj: KubeObject): Record<string, string> {
  const spec = obj.spec as { template?: { metadata?: { labels?: Record<string, string> } } } | undefined;
  if (spec?.template) {
    spec.template.metadata ??= {};
    return (spec.template.metadata.labels ??= {});
  }
  return (obj.metadata.labels ??= {});
}
