import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-28';

export interface ConfigFileProps {
  readonly name: string;
  readonly labels: Record<string, string>;
  /** File name inside the ConfigMap. @default 'config.yaml' */
  readonly fileName?: string;
  readonly content: string;
}

/** A runtime config file as a one-key ConfigMap (mounted as a directory, so updates reach the pod). */
export class ConfigFile extends Construct {
  constructor(scope: Construct, id: string, props: ConfigFileProps) {
    super(scope, id);
    new k8s.KubeConfigMap(this, 'configmap', {
      metadata: { name: props.name, labels: props.labels },
      data: { [props.fileName ?? 'config.yaml']: props.content },
    });
  }
}
