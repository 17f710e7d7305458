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

/** "/api/v1/namespaces/ns/configmaps", "/apis/apps/v1/deployments", ... */
export function collectionPath(r: ApiResource, namespace: string): string {
  const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  return namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${r.resource}` : `${base}/${r.resource}`;
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
