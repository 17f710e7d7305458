import type { KubeRequestIntent } from '../../shared/errors.js';

/** One listable, watchable resource as discovery reports it. */
export interface ApiResource {
  group: string;
  version: string;
  kind: string;
  /** Plural name used in URLs, e.g. "deployments". */
  resource: string;
  namespaced: boolean;
}

export const resourceId = (r: ApiResource): string => `${r.resource}.${r.group}/${r.version}`;

export const apiVersionOfResource = (r: ApiResource): string => (r.group ? `${r.group}/${r.version}` : r.version);

/** "deployments.apps", "configmaps": the name RBAC and error messages use. */
export const resourceName = (r: ApiResource): string => (r.group ? `${r.resource}.${r.group}` : r.resource);

/** "/api/v1/namespaces/ns/configmaps", "/apis/apps/v1/deployments", ...; a cluster-scoped kind ignores `namespace`. */
export function collectionPath(r: ApiResource, namespace: string | undefined): string {
  const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  return r.namespaced && namespace
    ? `${base}/namespaces/${encodeURIComponent(namespace)}/${r.resource}`
    : `${base}/${r.resource}`;
}

export function objectPath(r: ApiResource, namespace: string | undefined, name: string, sub?: string): string {
  return `${collectionPath(r, namespace)}/${encodeURIComponent(name)}${sub ? `/${sub}` : ''}`;
}

/** What a request on `r` means, for error messages ("cannot patch deployments.apps "web" in namespace ..."). */
export function intentFor(
  verb: string,
  r: ApiResource,
  namespace?: string,
  name?: string,
  sub?: string,
): KubeRequestIntent {
  const out: KubeRequestIntent = { verb, resource: resourceName(r) + (sub ? `/${sub}` : '') };
  if (r.namespaced && namespace) out.namespace = namespace;
  if (name) out.name = name;
  return out;
}

/** Secrets are only ever requested as metadata, so their data never leaves the API server. */
export const isMetadataOnly = (r: ApiResource): boolean => r.group === '' && r.kind === 'Secret';

export const PARTIAL_OBJECT_METADATA = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
export const PARTIAL_OBJECT_METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

export const CRD_RESOURCE: ApiResource = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  kind: 'CustomResourceDefinition',
  resource: 'customresourcedefinitions',
  namespaced: false,
};
