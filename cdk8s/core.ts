import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-28';
import { addManifests, type IdentifiedManifest } from './manifest.js';

/** A Namespace the place owns (remote agent and account-RBAC places; shared namespaces are never emitted). */
export class Namespace extends Construct {
  constructor(scope: Construct, id: string, props: { readonly name: string; readonly labels: Record<string, string> }) {
    super(scope, id);
    addManifests(this, namespaceManifests(props));
  }
}

/** The objects of a Namespace construct, as plain data. */
export function namespaceManifests(props: {
  readonly name: string;
  readonly labels: Record<string, string>;
}): IdentifiedManifest[] {
  return [['namespace', { ...k8s.KubeNamespace.GVK, metadata: { name: props.name, labels: props.labels } }]];
}

export interface ServiceAccountProps {
  readonly name: string;
  readonly namespace: string;
  readonly labels: Record<string, string>;
  /**
   * Also emit a long-lived token Secret, for building the kubeconfig of a kubeconfig-based account.
   * @default false
   */
  readonly tokenSecret?: boolean;
}

export class ServiceAccount extends Construct {
  constructor(scope: Construct, id: string, props: ServiceAccountProps) {
    super(scope, id);
    addManifests(this, serviceAccountManifests(props));
  }
}

/** The objects of a ServiceAccount construct, as plain data. */
export function serviceAccountManifests(props: ServiceAccountProps): IdentifiedManifest[] {
  const out: IdentifiedManifest[] = [
    [
      'sa',
      {
        ...k8s.KubeServiceAccount.GVK,
        metadata: { name: props.name, namespace: props.namespace, labels: props.labels },
        automountServiceAccountToken: false,
      },
    ],
  ];
  if (props.tokenSecret) {
    out.push([
      'token',
      {
        ...k8s.KubeSecret.GVK,
        metadata: {
          name: `${props.name}-token`,
          namespace: props.namespace,
          labels: props.labels,
          annotations: { 'kubernetes.io/service-account.name': props.name },
        },
        type: 'kubernetes.io/service-account-token',
      },
    ]);
  }
  return out;
}

export interface KeySecretProps {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly key: string;
  readonly value: string;
}

/** An Opaque Secret of one key, for a secret synth generated (the dynamic accounts' key, the peer secret). */
export class KeySecret extends Construct {
  constructor(scope: Construct, id: string, props: KeySecretProps) {
    super(scope, id);
    new k8s.KubeSecret(this, 'secret', {
      metadata: { name: props.name, labels: props.labels },
      type: 'Opaque',
      stringData: { [props.key]: props.value },
    });
  }
}
