import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-28';

export interface TlsSecretProps {
  readonly name: string;
  readonly labels: Record<string, string>;
  /** PEM of the CA that signs the peer's certificate (`ca.crt`). */
  readonly caCert: string;
  /** Certificate and key (`tls.crt`, `tls.key`); without them the Secret is Opaque and carries only `ca.crt`. */
  readonly cert?: string;
  readonly key?: string;
}

/** TLS material as a `kubernetes.io/tls` Secret with the CA bundle next to it (never the CA key). */
export class TlsSecret extends Construct {
  constructor(scope: Construct, id: string, props: TlsSecretProps) {
    super(scope, id);
    const withPair = props.cert !== undefined && props.key !== undefined;
    new k8s.KubeSecret(this, 'secret', {
      metadata: { name: props.name, labels: props.labels },
      type: withPair ? 'kubernetes.io/tls' : 'Opaque',
      stringData: {
        'ca.crt': props.caCert,
        ...(withPair ? { 'tls.crt': props.cert as string, 'tls.key': props.key as string } : {}),
      },
    });
  }
}

export interface CertManagerCertificateProps {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly secretName: string;
  readonly issuerRef: { readonly name: string; readonly kind: string; readonly group: string };
  readonly usage: 'server' | 'client';
  readonly commonName: string;
  readonly dnsNames?: string[];
  readonly uris?: string[];
  readonly durationHours: number;
}

/** A cert-manager Certificate (ECDSA P-256, rotated key) instead of generated material. */
export class CertManagerCertificate extends Construct {
  constructor(scope: Construct, id: string, props: CertManagerCertificateProps) {
    super(scope, id);
    new ApiObject(this, 'certificate', {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: props.name, labels: props.labels },
      spec: {
        secretName: props.secretName,
        commonName: props.commonName,
        ...(props.dnsNames && props.dnsNames.length > 0 ? { dnsNames: props.dnsNames } : {}),
        ...(props.uris && props.uris.length > 0 ? { uris: props.uris } : {}),
        duration: `${props.durationHours}h`,
        privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always', encoding: 'PKCS8' },
        usages: ['digital signature', props.usage === 'server' ? 'server auth' : 'client auth'],
        issuerRef: props.issuerRef,
      },
    });
  }
}
