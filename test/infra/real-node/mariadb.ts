/**
 * MariaDB as a pod of the real node's cluster, for the plugin-server's MySQL store: the image from
 * mariadb.Dockerfile (test/infra/image.ts mariadbImage), a data directory on an emptyDir initialised at start, one
 * database and one user with a password for the plugin-server (as an operator's DBA would hand out), and a
 * ClusterIP Service. The plugin-server's Secret then holds `mysqlUrl(...)`.
 */
import { MARIADB_IMAGE } from '../image.js';

export interface MariaDbInCluster {
  namespace: string;
  database: string;
  user: string;
  password: string;
  /** More databases for the same user: installs side by side, each with a store of its own. */
  moreDatabases?: string[];
}

const NAME = 'mariadb';

/** The URL the plugin-server's Secret holds: the Service's cluster DNS name. */
export function mysqlUrl(db: MariaDbInCluster, database = db.database): string {
  return `mysql://${db.user}:${encodeURIComponent(db.password)}@${NAME}.${db.namespace}.svc.cluster.local:3306/${database}`;
}

export function mariadbManifests(db: MariaDbInCluster): object {
  const labels = { 'app.kubernetes.io/name': NAME };
  const databases = [db.database, ...(db.moreDatabases ?? [])];
  const init = [
    `CREATE USER IF NOT EXISTS '${db.user}'@'%' IDENTIFIED BY '${db.password}';`,
    ...databases.flatMap((d) => [
      `CREATE DATABASE IF NOT EXISTS \`${d}\`;`,
      `GRANT ALL PRIVILEGES ON \`${d}\`.* TO '${db.user}'@'%';`,
    ]),
  ].join('\n');
  // The server runs as root inside its container (--user=root), as test/infra/mariadb.ts runs it on the host: the
  // image's mysql user has no fixed uid to give the pod's securityContext.
  const start = [
    'mariadb-install-db --no-defaults --datadir=/var/lib/mysql --user=root --skip-test-db',
    '--auth-root-authentication-method=normal >/dev/null &&',
    'exec mariadbd --no-defaults --datadir=/var/lib/mysql --user=root --bind-address=0.0.0.0 --port=3306',
    '--socket=/run/mysqld/mysqld.sock --init-file=/etc/mariadb-init/init.sql --innodb-buffer-pool-size=64M',
  ].join(' ');
  return {
    apiVersion: 'v1',
    kind: 'List',
    items: [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: db.namespace } },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: `${NAME}-init`, namespace: db.namespace },
        stringData: { 'init.sql': init },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: NAME, namespace: db.namespace, labels },
        spec: {
          replicas: 1,
          strategy: { type: 'Recreate' },
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              automountServiceAccountToken: false,
              containers: [
                {
                  name: NAME,
                  image: MARIADB_IMAGE,
                  imagePullPolicy: 'Never',
                  command: ['sh', '-c', start],
                  ports: [{ name: 'mysql', containerPort: 3306 }],
                  readinessProbe: { tcpSocket: { port: 'mysql' }, periodSeconds: 2 },
                  volumeMounts: [
                    { name: 'data', mountPath: '/var/lib/mysql' },
                    { name: 'run', mountPath: '/run/mysqld' },
                    { name: 'init', mountPath: '/etc/mariadb-init', readOnly: true },
                  ],
                },
              ],
              volumes: [
                { name: 'data', emptyDir: {} },
                { name: 'run', emptyDir: {} },
                { name: 'init', secret: { secretName: `${NAME}-init` } },
              ],
            },
          },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: NAME, namespace: db.namespace, labels },
        spec: { selector: labels, ports: [{ name: 'mysql', port: 3306, targetPort: 'mysql' }] },
      },
    ],
  };
}
