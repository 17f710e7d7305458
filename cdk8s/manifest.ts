import { ApiObject } from 'cdk8s';
import type { Construct } from 'constructs';

/**
 * A Kubernetes object as plain data. Constructs whose objects are only data (RBAC, namespaces, ServiceAccounts)
 * describe them once as manifests: the construct adds them to its chart, and the compiler, which emits thousands of
 * them for a large topology, takes them as they are instead of through a cdk8s App's synthesis (most of synth's CPU).
 * Every value is defined and non-null, so both paths give the same objects.
 */
export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
  };
  readonly [field: string]: unknown;
}

/** A manifest with the id of the construct that adds it (unique within its scope). */
export type IdentifiedManifest = readonly [id: string, manifest: Manifest];

/** Adds manifests to a construct's scope, as the ApiObjects a chart renders. */
export function addManifests(scope: Construct, manifests: readonly IdentifiedManifest[]): void {
  for (const [id, m] of manifests) new ApiObject(scope, id, m);
}
