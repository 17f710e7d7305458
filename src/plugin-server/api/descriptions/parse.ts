import { knownNamespaced, parseFullResourceName } from '../../../shared/ops/kinds.js';
import type { IssueReason, ValidationIssue } from './issues.js';
import type {
  ApplyMode,
  Artifact,
  ClouddriverOperation,
  CleanupArtifactsPayload,
  DeletePayload,
  DeployPayload,
  EnableDisablePayload,
  KubeObject,
  LabelSelector,
  Moniker,
  NormalizedOperation,
  PatchPayload,
  PatchStrategy,
  PropagationPolicy,
  RunJobPayload,
  ScalePayload,
  SelectorKind,
  Target,
  TargetPayload,
  UndoRolloutPayload,
} from '../../../shared/ops/types.js';

/**
 * Clouddriver operation bodies → normalized operations. Descriptions are read the way Clouddriver's Jackson
 * conversion reads them: unknown keys are ignored (Orca posts the whole stage context), `credentials` is an
 * alias of `account`, and booleans/numbers in `options` may arrive as strings.
 */

export type Endpoint = 'kubernetes' | 'ops';

export type ParseResult = { ok: true; operations: NormalizedOperation[] } | { ok: false; errors: ValidationIssue[] };

export interface ParseOptions {
  /** `kubernetes` for `/kubernetes/ops`, `ops` for the deprecated `/ops` (each description names its provider). */
  endpoint: Endpoint;
  /** Set for `POST /kubernetes/ops/{operationName}`: the body is then the description itself. */
  operationName?: string;
  /** Default wait for deleted objects to be gone. */
  deleteWaitTimeoutMs?: number;
}

export const DEFAULT_DELETE_WAIT_MS = 60_000;

/** Operation names accepted on the REST API, with the internal type they run as. */
const OPERATION_ALIASES: Record<string, ClouddriverOperation> = {
  deployManifest: 'deployManifest',
  deleteManifest: 'deleteManifest',
  patchManifest: 'patchManifest',
  scaleManifest: 'scaleManifest',
  resizeServerGroup: 'scaleManifest',
  undoRolloutManifest: 'undoRolloutManifest',
  pauseRolloutManifest: 'pauseRolloutManifest',
  resumeRolloutManifest: 'resumeRolloutManifest',
  rollingRestartManifest: 'rollingRestartManifest',
  enableManifest: 'enableManifest',
  disableManifest: 'disableManifest',
  runJob: 'runJob',
  cleanupArtifacts: 'cleanupArtifacts',
};

type Json = Record<string, unknown>;

class Ctx {
  readonly issues: ValidationIssue[] = [];
  constructor(
    readonly index: number,
    readonly operation: string,
  ) {}
  add(field: string, reason: IssueReason, message: string): void {
    this.issues.push({ index: this.index, operation: this.operation, field, reason, message });
  }
}

export function parseOperations(body: unknown, options: ParseOptions): ParseResult {
  const entries: { name: string; description: unknown }[] = [];
  const issues: ValidationIssue[] = [];
  if (options.operationName !== undefined) {
    entries.push({ name: options.operationName, description: body });
  } else if (!Array.isArray(body)) {
    issues.push({
      index: 0,
      operation: '',
      field: '',
      reason: 'invalid',
      message: 'the body must be a JSON array of {"<operationName>": {description}} objects',
    });
  } else if (body.length === 0) {
    issues.push({ index: 0, operation: '', field: '', reason: 'empty', message: 'no operations given' });
  } else {
    body.forEach((entry, index) => {
      const keys = isObject(entry) ? Object.keys(entry) : [];
      if (!isObject(entry) || keys.length !== 1) {
        issues.push({
          index,
          operation: '',
          field: '',
          reason: 'invalid',
          message: 'each entry must be an object with exactly one key, the operation name',
        });
        return;
      }
      const name = keys[0] as string;
      entries.push({ name, description: entry[name] });
    });
  }
  const operations: NormalizedOperation[] = [];
  entries.forEach((entry, i) => {
    const index = options.operationName !== undefined ? 0 : i;
    const name = entry.name.replace(/@.*$/, '');
    const ctx = new Ctx(index, name);
    const op = parseOne(ctx, name, entry.description, options);
    issues.push(...ctx.issues);
    if (op && ctx.issues.length === 0) operations.push(op);
  });
  return issues.length > 0 ? { ok: false, errors: issues } : { ok: true, operations };
}

/**
 * Clouddriver's answer to an operation its Kubernetes provider has no converter for (AnnotationsBasedAtomicOperations
 * Registry, a 400 before any validation): Orca's Run Job cancel posts `destroyJob`, which gets exactly this.
 */
export function unknownOperationMessage(name: string): string {
  return `No atomic operation converter found for description '${name}' and cloud provider 'kubernetes'`;
}

/** The first issue that is an operation name with no converter, which Clouddriver answers before validating. */
export function unknownOperationIssue(issues: readonly ValidationIssue[]): ValidationIssue | undefined {
  return issues.find(
    (i) => i.field === '' && i.reason === 'unsupported' && i.message === unknownOperationMessage(i.operation),
  );
}

function parseOne(
  ctx: Ctx,
  name: string,
  description: unknown,
  options: ParseOptions,
): NormalizedOperation | undefined {
  const type = OPERATION_ALIASES[name];
  if (!type) {
    ctx.add('', 'unsupported', unknownOperationMessage(name));
    return undefined;
  }
  if (!isObject(description)) {
    ctx.add('', 'invalid', 'the description must be a JSON object');
    return undefined;
  }
  const d = description;
  if (options.endpoint === 'ops') {
    const provider = d.cloudProvider;
    if (provider !== 'kubernetes') {
      ctx.add(
        'cloudProvider',
        provider === undefined ? 'empty' : 'unsupported',
        `POST /ops needs "cloudProvider": "kubernetes" in each description${provider === undefined ? '' : `, got ${JSON.stringify(provider)}`}`,
      );
    }
  }
  const accountField = typeof d.account === 'string' && d.account ? 'account' : 'credentials';
  const account = str(d[accountField]);
  if (!account) ctx.add('account', 'empty', 'an account is required (field "account" or its alias "credentials")');
  const payload = parsePayload(ctx, type, name, d, options);
  if (payload === undefined || !account) return undefined;
  return { type, account, payload } as NormalizedOperation;
}

function parsePayload(ctx: Ctx, type: ClouddriverOperation, name: string, d: Json, options: ParseOptions): unknown {
  switch (type) {
    case 'deployManifest':
      return parseDeploy(ctx, d);
    case 'deleteManifest':
      return parseDelete(ctx, d, options.deleteWaitTimeoutMs ?? DEFAULT_DELETE_WAIT_MS);
    case 'patchManifest':
      return parsePatch(ctx, d);
    case 'scaleManifest':
      return name === 'resizeServerGroup' ? parseResize(ctx, d) : parseScale(ctx, d);
    case 'undoRolloutManifest':
      return parseUndo(ctx, d);
    case 'pauseRolloutManifest':
    case 'resumeRolloutManifest':
    case 'rollingRestartManifest':
      return parseTargetOnly(ctx, d);
    case 'enableManifest':
    case 'disableManifest':
      return parseEnableDisable(ctx, d);
    case 'runJob':
      return parseRunJob(ctx, d);
    case 'cleanupArtifacts':
      return parseCleanup(ctx, d);
  }
}

// ---- deploy --------------------------------------------------------------------------------------------------

function parseDeploy(ctx: Ctx, d: Json): DeployPayload | undefined {
  const manifests = parseManifestList(ctx, d);
  const moniker = parseMoniker(ctx, d);
  const namespaceOverride = optionalName(ctx, d, 'namespaceOverride');
  const services = stringList(ctx, d, 'services');
  for (const [i, s] of services.entries()) {
    if (!parseFullResourceName(s)) {
      ctx.add(`services[${i}]`, 'invalid', `"${s}" is not a load balancer name like "service my-service"`);
    }
  }
  const out: DeployPayload = {
    manifests,
    moniker: moniker ?? { app: '' },
    enableTraffic: bool(ctx, d, 'enableTraffic') ?? true,
    services,
    enableArtifactBinding: bool(ctx, d, 'enableArtifactBinding') ?? true,
    requiredArtifacts: artifactList(ctx, d, 'requiredArtifacts'),
    optionalArtifacts: artifactList(ctx, d, 'optionalArtifacts'),
    skipSpecTemplateLabels: bool(ctx, d, 'skipSpecTemplateLabels') ?? false,
  };
  if (namespaceOverride) out.namespaceOverride = namespaceOverride;
  const versioned = bool(ctx, d, 'versioned');
  if (versioned !== undefined) out.versioned = versioned;
  const applyMode = parseApplyMode(ctx, d);
  if (applyMode) out.applyMode = applyMode;
  return out;
}

function parseManifestList(ctx: Ctx, d: Json): KubeObject[] {
  const out: KubeObject[] = [];
  const list = d.manifests;
  if (list !== undefined && list !== null && !Array.isArray(list)) {
    ctx.add('manifests', 'invalid', 'manifests must be a list of Kubernetes objects');
    return out;
  }
  const useSingle = !Array.isArray(list) || list.filter((m) => m !== null).length === 0;
  if (useSingle) {
    if (d.manifest === undefined || d.manifest === null) {
      ctx.add('manifests', 'empty', 'no manifests to deploy');
      return out;
    }
    collectManifest(ctx, d.manifest, 'manifest', out);
    return out;
  }
  (list as unknown[]).forEach((m, i) => {
    // Trailing `---` documents arrive as nulls; Clouddriver skips them.
    if (m !== null) collectManifest(ctx, m, `manifests[${i}]`, out);
  });
  if (out.length === 0 && ctx.issues.length === 0) ctx.add('manifests', 'empty', 'no manifests to deploy');
  return out;
}

/** Validates one manifest and appends it, expanding `kind: List`. */
function collectManifest(ctx: Ctx, m: unknown, field: string, out: KubeObject[]): void {
  if (!isObject(m)) {
    ctx.add(field, 'invalid', 'a manifest must be a Kubernetes object (a JSON map)');
    return;
  }
  if (m.kind === 'List' && (m.apiVersion === 'v1' || m.apiVersion === undefined)) {
    const items = m.items;
    if (!Array.isArray(items)) {
      ctx.add(`${field}.items`, 'invalid', 'a List needs an items array');
      return;
    }
    items.forEach((item, j) => {
      if (item !== null) collectManifest(ctx, item, `${field}.items[${j}]`, out);
    });
    return;
  }
  const manifest = checkManifest(ctx, m, field);
  if (manifest) out.push(manifest);
}

function checkManifest(ctx: Ctx, m: Json, field: string): KubeObject | undefined {
  let bad = false;
  const fail = (f: string, reason: IssueReason, message: string): void => {
    bad = true;
    ctx.add(`${field}.${f}`, reason, message);
  };
  if (typeof m.apiVersion !== 'string' || !m.apiVersion) fail('apiVersion', 'empty', 'a manifest needs apiVersion');
  else if (!/^([a-z0-9.-]+\/)?[a-z0-9]+$/.test(m.apiVersion))
    fail('apiVersion', 'invalid', `"${m.apiVersion}" is not an apiVersion`);
  if (typeof m.kind !== 'string' || !m.kind) fail('kind', 'empty', 'a manifest needs kind');
  else if (!/^[A-Za-z][A-Za-z0-9]*$/.test(m.kind)) fail('kind', 'invalid', `"${m.kind}" is not a kind`);
  const meta = m.metadata;
  if (!isObject(meta)) {
    fail('metadata', 'empty', 'a manifest needs metadata with a name');
  } else {
    const name = meta.name;
    const generateName = meta.generateName;
    if (name !== undefined && typeof name !== 'string')
      fail('metadata.name', 'invalid', 'metadata.name must be a string');
    else if (typeof name === 'string' && name && !validObjectName(name)) {
      fail('metadata.name', 'invalid', `"${name}" is not a valid object name`);
    }
    if (generateName !== undefined && typeof generateName !== 'string') {
      fail('metadata.generateName', 'invalid', 'metadata.generateName must be a string');
    }
    if (!name && !generateName)
      fail('metadata.name', 'empty', 'a manifest needs metadata.name or metadata.generateName');
    if (meta.namespace !== undefined && meta.namespace !== null && typeof meta.namespace !== 'string') {
      fail('metadata.namespace', 'invalid', 'metadata.namespace must be a string');
    }
    for (const key of ['labels', 'annotations'] as const) {
      const map = meta[key];
      if (map === undefined || map === null) continue;
      if (!isObject(map)) {
        fail(`metadata.${key}`, 'invalid', `metadata.${key} must be a map of strings`);
        continue;
      }
      for (const [k, v] of Object.entries(map)) {
        if (typeof v !== 'string')
          fail(`metadata.${key}.${k}`, 'invalid', `${key} values must be strings, got ${typeof v}`);
      }
    }
  }
  return bad ? undefined : (m as KubeObject);
}

function validObjectName(name: string): boolean {
  // The API server has the final word per kind (RBAC names may contain ':'); refuse only what no kind accepts.
  return name.length <= 253 && !name.includes('/') && name !== '.' && name !== '..' && !/\s/.test(name);
}

function parseMoniker(ctx: Ctx, d: Json): Moniker | undefined {
  const m = d.moniker;
  if (m === undefined || m === null) {
    // Deck always sends a moniker; a hand-written request may carry only the application.
    const app = str(d.app) ?? str(d.application);
    if (app) return { app };
    ctx.add('moniker', 'empty', 'every resource deployed via Spinnaker must be assigned a moniker ({"app": ...})');
    return undefined;
  }
  if (!isObject(m)) {
    ctx.add('moniker', 'invalid', 'moniker must be an object');
    return undefined;
  }
  const app = str(m.app) ?? str(d.app) ?? str(d.application);
  if (!app) {
    ctx.add('moniker.app', 'empty', 'moniker.app is required');
    return undefined;
  }
  const out: Moniker = { app };
  for (const key of ['cluster', 'stack', 'detail'] as const) {
    const v = m[key];
    if (typeof v === 'string' && v) out[key] = v;
    else if (v !== undefined && v !== null && typeof v !== 'string')
      ctx.add(`moniker.${key}`, 'invalid', `moniker.${key} must be a string`);
  }
  const seq = int(m.sequence);
  if (seq !== undefined) out.sequence = seq;
  return out;
}

function parseApplyMode(ctx: Ctx, d: Json): ApplyMode | undefined {
  const v = d.applyMode;
  if (v === undefined || v === null || v === '') return undefined;
  if (v === 'server-side' || v === 'client-side') return v;
  ctx.add('applyMode', 'invalid', `applyMode must be "server-side" or "client-side", got ${JSON.stringify(v)}`);
  return undefined;
}

// ---- delete --------------------------------------------------------------------------------------------------

function parseDelete(ctx: Ctx, d: Json, defaultWaitMs: number): DeletePayload | undefined {
  const location = optionalName(ctx, d, 'location') ?? '';
  const manifestName = str(d.manifestName);
  let target: Target | undefined;
  if (manifestName) target = parseTarget(ctx, location, manifestName, 'manifestName');
  const kinds = stringList(ctx, d, 'kinds');
  const labelSelectors = parseLabelSelectors(ctx, d);
  if (!manifestName && kinds.length === 0) {
    ctx.add('manifestName', 'empty', 'give manifestName ("deployment web") or kinds with labelSelectors');
  }
  const options = isObject(d.options) ? d.options : {};
  if (d.options !== undefined && d.options !== null && !isObject(d.options)) {
    ctx.add('options', 'invalid', 'options must be a map');
  }
  const out: DeletePayload = { location, kinds, labelSelectors, waitTimeoutMs: defaultWaitMs, warnings: [] };
  if (target) out.target = target;
  const policy = propagationPolicyOf(ctx, options);
  if (policy) out.propagationPolicy = policy;
  const grace = options.gracePeriodSeconds;
  if (grace !== undefined && grace !== null && grace !== '') {
    const n = int(grace);
    if (n === undefined || n < 0)
      out.warnings.push(`ignoring gracePeriodSeconds ${JSON.stringify(grace)}: not a number of seconds`);
    else out.gracePeriodSeconds = n;
  }
  const wait = options.waitTimeoutSeconds ?? d.waitTimeoutSeconds;
  if (wait !== undefined && wait !== null && wait !== '') {
    const n = int(wait);
    if (n === undefined || n < 0)
      ctx.add('options.waitTimeoutSeconds', 'invalid', 'waitTimeoutSeconds must be a number ≥ 0');
    else out.waitTimeoutMs = n * 1000;
  }
  return out;
}

function propagationPolicyOf(ctx: Ctx, options: Json): PropagationPolicy | undefined {
  const orphan = options.orphanDependents;
  if (orphan !== undefined && orphan !== null && orphan !== '')
    return String(orphan) === 'true' ? 'Orphan' : 'Background';
  const cascading = options.cascading;
  if (cascading === undefined || cascading === null || cascading === '') return undefined;
  const text = String(cascading).toLowerCase();
  if (text === 'true') return 'Background';
  if (text === 'false') return 'Orphan';
  if (text === 'foreground') return 'Foreground';
  if (text === 'background') return 'Background';
  if (text === 'orphan') return 'Orphan';
  ctx.add(
    'options.cascading',
    'invalid',
    `cascading must be true, false, foreground, background or orphan, got ${JSON.stringify(cascading)}`,
  );
  return undefined;
}

function parseLabelSelectors(ctx: Ctx, d: Json): LabelSelector[] {
  const ls = d.labelSelectors;
  if (ls === undefined || ls === null) return [];
  const list = isObject(ls) ? ls.selectors : ls;
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) {
    ctx.add('labelSelectors.selectors', 'invalid', 'labelSelectors.selectors must be a list');
    return [];
  }
  const kinds: SelectorKind[] = ['ANY', 'EQUALS', 'NOT_EQUALS', 'CONTAINS', 'NOT_CONTAINS', 'EXISTS', 'NOT_EXISTS'];
  const out: LabelSelector[] = [];
  list.forEach((s, i) => {
    const f = `labelSelectors.selectors[${i}]`;
    if (!isObject(s)) return ctx.add(f, 'invalid', 'a selector must be {"kind","key","values"}');
    const kind = String(s.kind ?? '').toUpperCase() as SelectorKind;
    const key = str(s.key);
    if (!kinds.includes(kind))
      return ctx.add(`${f}.kind`, 'invalid', `selector kind must be one of ${kinds.join(', ')}`);
    if (!key) return ctx.add(`${f}.key`, 'empty', 'a selector needs a key');
    const values = Array.isArray(s.values) ? s.values.map(String) : [];
    if (['EQUALS', 'NOT_EQUALS'].includes(kind) && values.length !== 1) {
      return ctx.add(`${f}.values`, 'invalid', `${kind} takes exactly one value`);
    }
    if (['CONTAINS', 'NOT_CONTAINS'].includes(kind) && values.length === 0) {
      return ctx.add(`${f}.values`, 'empty', `${kind} needs at least one value`);
    }
    out.push({ kind, key, values });
  });
  return out;
}

// ---- patch, scale, rollout, traffic ----------------------------------------------------------------------------

function parsePatch(ctx: Ctx, d: Json): PatchPayload | undefined {
  const target = requiredTarget(ctx, d);
  const options = isObject(d.options) ? d.options : {};
  const rawStrategy = options.mergeStrategy ?? 'strategic';
  const strategy = String(rawStrategy).toLowerCase() as PatchStrategy;
  if (!['strategic', 'merge', 'json'].includes(strategy)) {
    ctx.add(
      'options.mergeStrategy',
      'invalid',
      `mergeStrategy must be strategic, merge or json, got ${JSON.stringify(rawStrategy)}`,
    );
  }
  let patchBody = d.patchBody;
  if (patchBody === undefined || patchBody === null) {
    ctx.add('patchBody', 'empty', 'patchBody is required');
  } else if (strategy === 'json') {
    if (!Array.isArray(patchBody)) ctx.add('patchBody', 'invalid', 'a json patch is a list of {"op","path","value"}');
    else {
      patchBody.forEach((p, i) => {
        if (!isObject(p) || !['add', 'replace', 'remove'].includes(String(p.op))) {
          ctx.add(`patchBody[${i}].op`, 'invalid', 'json patch operations are add, replace or remove');
        } else if (typeof p.path !== 'string' || !p.path.startsWith('/')) {
          ctx.add(`patchBody[${i}].path`, 'invalid', 'a json patch path is a JSON pointer starting with "/"');
        } else if (p.op !== 'remove' && !('value' in p)) {
          ctx.add(`patchBody[${i}].value`, 'empty', `"${String(p.op)}" needs a value`);
        }
      });
    }
  } else {
    // Orca sends its stage's manifests list; for strategic/merge only the first (and only) entry counts.
    if (Array.isArray(patchBody) && patchBody.length === 1) patchBody = patchBody[0];
    if (!isObject(patchBody)) ctx.add('patchBody', 'invalid', `a ${strategy} patch is one object (a partial manifest)`);
  }
  if (!target) return undefined;
  return {
    target,
    strategy,
    patchBody,
    record: bool(ctx, options, 'record') ?? false,
    allArtifacts: artifactList(ctx, d, 'allArtifacts'),
    requiredArtifacts: artifactList(ctx, d, 'requiredArtifacts'),
  };
}

function parseScale(ctx: Ctx, d: Json): ScalePayload | undefined {
  const target = requiredTarget(ctx, d);
  const replicas = int(d.replicas);
  if (replicas === undefined || replicas < 0)
    ctx.add('replicas', d.replicas === undefined ? 'empty' : 'invalid', 'replicas must be an integer ≥ 0');
  return target && replicas !== undefined ? { target, replicas } : undefined;
}

/** Deck's server-group resize: `{serverGroupName, region, capacity: {desired}}`. */
function parseResize(ctx: Ctx, d: Json): ScalePayload | undefined {
  const location = str(d.region) ?? str(d.location) ?? str(d.namespace) ?? '';
  const name = str(d.serverGroupName) ?? str(d.manifestName);
  if (!name) {
    ctx.add('serverGroupName', 'empty', 'serverGroupName is required ("replicaSet web-v003")');
    return undefined;
  }
  const target = parseTarget(ctx, location, name, 'serverGroupName');
  const capacity = isObject(d.capacity) ? d.capacity : {};
  const replicas = int(capacity.desired);
  if (replicas === undefined || replicas < 0)
    ctx.add('capacity.desired', 'invalid', 'capacity.desired must be an integer ≥ 0');
  return target && replicas !== undefined ? { target, replicas } : undefined;
}

function parseUndo(ctx: Ctx, d: Json): UndoRolloutPayload | undefined {
  const target = requiredTarget(ctx, d);
  const out: UndoRolloutPayload | undefined = target ? { target } : undefined;
  for (const key of ['revision', 'numRevisionsBack'] as const) {
    const v = d[key];
    if (v === undefined || v === null || v === '') continue;
    const n = int(v);
    if (n === undefined || n < 0) ctx.add(key, 'invalid', `${key} must be an integer ≥ 0`);
    else if (out) out[key] = n;
  }
  return out;
}

function parseTargetOnly(ctx: Ctx, d: Json): TargetPayload | undefined {
  const target = requiredTarget(ctx, d);
  return target ? { target } : undefined;
}

function parseEnableDisable(ctx: Ctx, d: Json): EnableDisablePayload | undefined {
  const target = requiredTarget(ctx, d);
  const lbs =
    d.loadBalancers === undefined || d.loadBalancers === null ? undefined : stringList(ctx, d, 'loadBalancers');
  lbs?.forEach((lb, i) => {
    if (!parseFullResourceName(lb))
      ctx.add(`loadBalancers[${i}]`, 'invalid', `"${lb}" is not like "service my-service"`);
  });
  if (!target) return undefined;
  return lbs && lbs.length > 0 ? { target, loadBalancers: lbs } : { target };
}

// ---- cleanupArtifacts ------------------------------------------------------------------------------------------

function parseCleanup(ctx: Ctx, d: Json): CleanupArtifactsPayload {
  const out: KubeObject[] = [];
  const list = d.manifests;
  if (list !== undefined && list !== null && !Array.isArray(list)) {
    ctx.add('manifests', 'invalid', 'manifests must be a list of Kubernetes objects');
    return { manifests: out };
  }
  // Orca passes the deploy's outputs; an empty list is a valid no-op.
  (Array.isArray(list) ? list : []).forEach((m, i) => {
    if (m !== null) collectManifest(ctx, m, `manifests[${i}]`, out);
  });
  return { manifests: out };
}

// ---- runJob ----------------------------------------------------------------------------------------------------

function parseRunJob(ctx: Ctx, d: Json): RunJobPayload | undefined {
  let raw: unknown = d.manifest;
  let field = 'manifest';
  if ((raw === undefined || raw === null) && Array.isArray(d.manifests)) {
    const docs = d.manifests.filter((m) => m !== null);
    if (docs.length !== 1) {
      ctx.add('manifests', 'invalid', 'runJob takes exactly one Job manifest');
      return undefined;
    }
    raw = docs[0];
    field = 'manifests[0]';
  }
  if (!isObject(raw)) {
    ctx.add('manifest', 'empty', 'runJob needs a Job manifest');
    return undefined;
  }
  const manifest = checkManifest(ctx, raw, field);
  if (manifest && manifest.kind !== 'Job') {
    ctx.add(`${field}.kind`, 'unsupported', `only kind Job can be run, got ${manifest.kind}`);
    return undefined;
  }
  const application = str(d.application) ?? str(isObject(d.moniker) ? d.moniker.app : undefined) ?? str(d.app);
  if (!application) ctx.add('application', 'empty', 'application is required');
  const namespace = optionalName(ctx, d, 'namespace');
  if (!manifest || !application) return undefined;
  const out: RunJobPayload = {
    manifest,
    application,
    requiredArtifacts: artifactList(ctx, d, 'requiredArtifacts'),
    optionalArtifacts: artifactList(ctx, d, 'optionalArtifacts'),
  };
  if (namespace) out.namespace = namespace;
  const applyMode = parseApplyMode(ctx, d);
  if (applyMode) out.applyMode = applyMode;
  return out;
}

// ---- field helpers -------------------------------------------------------------------------------------------

function requiredTarget(ctx: Ctx, d: Json): Target | undefined {
  const location = optionalName(ctx, d, 'location') ?? '';
  const name = str(d.manifestName);
  if (!name) {
    ctx.add('manifestName', 'empty', 'manifestName is required ("deployment web")');
    return undefined;
  }
  return parseTarget(ctx, location, name, 'manifestName');
}

function parseTarget(ctx: Ctx, location: string, manifestName: string, field: string): Target | undefined {
  const parsed = parseFullResourceName(manifestName);
  if (!parsed) {
    ctx.add(field, 'invalid', `"${manifestName}" is not a full resource name like "deployment web"`);
    return undefined;
  }
  return {
    location,
    kind: parsed.kind.group && !parsed.kind.known ? `${parsed.kind.name}.${parsed.kind.group}` : parsed.kind.name,
    name: parsed.name,
  };
}

function optionalName(ctx: Ctx, d: Json, key: string): string | undefined {
  const v = d[key];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') {
    ctx.add(key, 'invalid', `${key} must be a string`);
    return undefined;
  }
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(v) || v.length > 63) {
    ctx.add(key, 'invalid', `"${v}" is not a valid namespace name`);
    return undefined;
  }
  return v;
}

function stringList(ctx: Ctx, d: Json, key: string): string[] {
  const v = d[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    ctx.add(key, 'invalid', `${key} must be a list of strings`);
    return [];
  }
  return v as string[];
}

function artifactList(ctx: Ctx, d: Json, key: string): Artifact[] {
  const v = d[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) {
    ctx.add(key, 'invalid', `${key} must be a list of artifacts`);
    return [];
  }
  const out: Artifact[] = [];
  v.forEach((a, i) => {
    if (a === null) return;
    if (!isObject(a) || typeof a.type !== 'string') ctx.add(`${key}[${i}]`, 'invalid', 'an artifact needs a type');
    else out.push(a as unknown as Artifact);
  });
  return out;
}

function bool(ctx: Ctx, d: Json, key: string): boolean | undefined {
  const v = d[key];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'boolean') return v;
  if (v === 'true' || v === 'false') return v === 'true';
  ctx.add(key, 'invalid', `${key} must be true or false`);
  return undefined;
}

function int(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^-?\d+$/.test(v.trim())) return Number(v.trim());
  return undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() ? v.trim() : undefined;
}

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Namespace a manifest lands in after `namespaceOverride` (cluster-scoped kinds keep none). */
export function effectiveNamespace(manifest: KubeObject, namespaceOverride: string | undefined): string | undefined {
  const namespaced = knownNamespaced(manifest.apiVersion, manifest.kind);
  if (namespaced === false) return undefined;
  return namespaceOverride || manifest.metadata.namespace || undefined;
}
