import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './exec.js';

export interface ControlPlanePki {
  dir: string;
  caCert: string;
  caKey: string;
  apiserverCert: string;
  apiserverKey: string;
  saKey: string;
  saPub: string;
  tokensCsv: string;
  adminToken: string;
}

/**
 * The control plane's PKI, made with Debian's openssl: a CA, the API server's serving certificate (IP SAN
 * 127.0.0.1, which Node's TLS needs), the ServiceAccount token signing key pair, and a static admin token
 * in group system:masters (the simplest admin identity for kubectl, helm, the controller manager and tests).
 */
export async function createPki(dir: string, opts: { ips?: string[] } = {}): Promise<ControlPlanePki> {
  mkdirSync(dir, { recursive: true });
  const p = (f: string) => join(dir, f);
  const ossl = (args: string[]) => run('openssl', args, { cwd: dir });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await ossl([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    p('ca.key'),
    '-out',
    p('ca.crt'),
    '-days',
    '3650',
    '-subj',
    '/CN=scale-agent-test-ca',
  ]);
  await ossl(['req', ...ec, '-keyout', p('apiserver.key'), '-out', p('apiserver.csr'), '-subj', '/CN=kube-apiserver']);
  // The `kubernetes` Service's ClusterIP (first of the service range) and the node's address when one runs.
  const ips = ['127.0.0.1', ...(opts.ips ?? ['10.0.0.1'])].map((ip) => `IP:${ip}`).join(',');
  writeFileSync(
    p('apiserver.ext'),
    `subjectAltName=${ips},DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n` +
      'extendedKeyUsage=serverAuth\n',
  );
  await ossl([
    'x509',
    '-req',
    '-in',
    p('apiserver.csr'),
    '-CA',
    p('ca.crt'),
    '-CAkey',
    p('ca.key'),
    '-CAcreateserial',
    '-days',
    '3650',
    '-out',
    p('apiserver.crt'),
    '-extfile',
    p('apiserver.ext'),
  ]);
  await ossl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', p('sa.key')]);
  await ossl(['pkey', '-in', p('sa.key'), '-pubout', '-out', p('sa.pub')]);
  const adminToken = randomBytes(24).toString('hex');
  // token,user,uid,"group1,group2"
  writeFileSync(p('tokens.csv'), `${adminToken},scale-agent-test-admin,uid-admin,"system:masters"\n`, { mode: 0o600 });
  return {
    dir,
    caCert: p('ca.crt'),
    caKey: p('ca.key'),
    apiserverCert: p('apiserver.crt'),
    apiserverKey: p('apiserver.key'),
    saKey: p('sa.key'),
    saPub: p('sa.pub'),
    tokensCsv: p('tokens.csv'),
    adminToken,
  };
}

/**
 * A kubeconfig for one user (a token, or a client certificate and key given as file paths) against one server,
 * with the CA inlined so the file stands alone.
 */
export function kubeconfigYaml(opts: {
  server: string;
  caPem: string;
  token?: string;
  clientCert?: { cert: string; key: string };
  user: string;
  namespace?: string;
}): string {
  const ca = Buffer.from(opts.caPem).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: scale-agent-test',
    '  cluster:',
    `    server: ${opts.server}`,
    `    certificate-authority-data: ${ca}`,
    'users:',
    `- name: ${opts.user}`,
    '  user:',
    ...(opts.clientCert
      ? [`    client-certificate: ${opts.clientCert.cert}`, `    client-key: ${opts.clientCert.key}`]
      : [`    token: ${opts.token}`]),
    'contexts:',
    '- name: scale-agent-test',
    '  context:',
    '    cluster: scale-agent-test',
    `    user: ${opts.user}`,
    ...(opts.namespace ? [`    namespace: ${opts.namespace}`] : []),
    'current-context: scale-agent-test',
    '',
  ].join('\n');
}

/**
 * One more certificate signed by the control plane's CA (for a node's kubelet and kube-proxy): `subject` is an
 * openssl -subj (`/O=group/CN=user`), `ext` openssl extension lines (key usage, SANs). Returns the cert and key paths.
 */
export async function issueCert(
  pki: ControlPlanePki,
  name: string,
  subject: string,
  ext: string[],
): Promise<{ cert: string; key: string }> {
  const p = (suffix: string) => join(pki.dir, `${name}.${suffix}`);
  const ossl = (args: string[]) => run('openssl', args, { cwd: pki.dir });
  await ossl(
    ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'].concat([
      '-keyout',
      p('key'),
      '-out',
      p('csr'),
      '-subj',
      subject,
    ]),
  );
  writeFileSync(p('ext'), ext.join('\n') + '\n');
  await ossl(
    ['x509', '-req', '-in', p('csr'), '-CA', pki.caCert, '-CAkey', pki.caKey, '-CAcreateserial'].concat([
      '-days',
      '3650',
      '-out',
      p('crt'),
      '-extfile',
      p('ext'),
    ]),
  );
  return { cert: p('crt'), key: p('key') };
}
