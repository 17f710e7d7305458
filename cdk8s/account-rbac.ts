import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-28';
import { standardLabels } from './labels.js';
import { addManifests, type IdentifiedManifest } from './manifest.js';

const RBAC_GROUP = 'rbac.authorization.k8s.io';

export interface PolicyRule {
  readonly apiGroups: string[];
  readonly resources: string[];
  readonly verbs: string[];
}

export interface AccountRbacProps {
  /** Spinnaker account name (a label on every object). */
  readonly account: string;
  /** Name of the Role/ClusterRole and its binding. */
  readonly roleName: string;
  /** The ServiceAccount the rules are bound to. */
  readonly subject: { readonly name: string; readonly namespace: string };
  /** Namespaces to grant in (one Role + RoleBinding each); empty for cluster-wide (ClusterRole + binding). */
  readonly namespaces: string[];
  /** Rules for namespaced resources (in every granted namespace, or cluster-wide). */
  readonly rules: readonly PolicyRule[];
  /**
   * Rules on cluster-scoped resources (namespaces, CRDs) for cluster-wide accounts.
   * @default - none
   */
  readonly clusterRules?: readonly PolicyRule[];
}

/**
 * Least-privilege access for one account: a Role + RoleBinding in each listed namespace, or one ClusterRole +
 * ClusterRoleBinding when the account is cluster-wide. Rules come in computed (see src/compiler/rbac-rules.ts).
 */
export class AccountRbac extends Construct {
  constructor(scope: Construct, id: string, props: AccountRbacProps) {
    super(scope, id);
    addManifests(this, accountRbacManifests(props));
  }
}

/** The objects of an AccountRbac, as plain data. */
export function accountRbacManifests(props: AccountRbacProps): IdentifiedManifest[] {
  // The account is the instance: one release (or place) per account's RBAC.
  const labels = standardLabels('rbac', {
    'app.kubernetes.io/instance': props.account,
    'scale-agent.io/account': props.account,
  });
  const subjects = [{ kind: 'ServiceAccount', name: props.subject.name, namespace: props.subject.namespace }];
  if (props.namespaces.length === 0) {
    return [
      [
        'role',
        {
          ...k8s.KubeClusterRole.GVK,
          metadata: { name: props.roleName, labels },
          rules: [...props.rules, ...(props.clusterRules ?? [])],
        },
      ],
      [
        'binding',
        {
          ...k8s.KubeClusterRoleBinding.GVK,
          metadata: { name: props.roleName, labels },
          roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: props.roleName },
          subjects,
        },
      ],
    ];
  }
  return props.namespaces.flatMap((ns): IdentifiedManifest[] => [
    [
      `role-${ns}`,
      {
        ...k8s.KubeRole.GVK,
        metadata: { name: props.roleName, namespace: ns, labels },
        rules: props.rules,
      },
    ],
    [
      `binding-${ns}`,
      {
        ...k8s.KubeRoleBinding.GVK,
        metadata: { name: props.roleName, namespace: ns, labels },
        roleRef: { apiGroup: RBAC_GROUP, kind: 'Role', name: props.roleName },
        subjects,
      },
    ],
  ]);
}

export interface SecretReaderRbacProps {
  /** Name of the Role and its binding. */
  readonly roleName: string;
  /** The agent's ServiceAccount; the Role is in its namespace. */
  readonly subject: { readonly name: string; readonly namespace: string };
  /** The Secrets it may read, by name. */
  readonly secrets: string[];
  /** The agent group (the instance label). */
  readonly instance: string;
}

/**
 * An agent's access to the Secrets it reads live by secret reference (kubeconfigs): get and watch on exactly those
 * names in its own namespace. Its watch carries `fieldSelector=metadata.name=NAME`, which the API server authorizes
 * by name, so neither `list` nor any other Secret is granted.
 */
export class SecretReaderRbac extends Construct {
  constructor(scope: Construct, id: string, props: SecretReaderRbacProps) {
    super(scope, id);
    addManifests(this, secretReaderRbacManifests(props));
  }
}

/** The objects of a SecretReaderRbac, as plain data. */
export function secretReaderRbacManifests(props: SecretReaderRbacProps): IdentifiedManifest[] {
  const labels = standardLabels('agent', { 'app.kubernetes.io/instance': props.instance });
  const metadata = { name: props.roleName, namespace: props.subject.namespace, labels };
  return [
    [
      'role',
      {
        ...k8s.KubeRole.GVK,
        metadata,
        rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: props.secrets, verbs: ['get', 'watch'] }],
      },
    ],
    [
      'binding',
      {
        ...k8s.KubeRoleBinding.GVK,
        metadata,
        roleRef: { apiGroup: RBAC_GROUP, kind: 'Role', name: props.roleName },
        subjects: [{ kind: 'ServiceAccount', name: props.subject.name, namespace: props.subject.namespace }],
      },
    ],
  ];
}
