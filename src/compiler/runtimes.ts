import type { BaseComponent } from './model.js';
import { AGENT_ADMIN_PORT, CONTAINER_GRPC_PORT, CONTAINER_HTTP_PORT, NAMES, PATHS } from './names.js';

/** What each runtime needs from its pod, whatever the place: arguments, ports, probes, resources. */
export interface RuntimeProfile {
  args: string[];
  ports: { name: string; containerPort: number }[];
  readinessProbe: Record<string, unknown>;
  livenessProbe: Record<string, unknown>;
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  /** The REST API's ClusterIP Service (plugin-server). */
  httpService?: { name: string; port: number; targetPort: string };
}

/** The agent's admin endpoint binds loopback only, so its probes run inside the container. */
const agentProbe = (path: string): Record<string, unknown> => ({
  exec: {
    command: [
      'node',
      '-e',
      `fetch('http://127.0.0.1:${AGENT_ADMIN_PORT}${path}').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))`,
    ],
  },
});

export const RUNTIMES: Record<BaseComponent, RuntimeProfile> = {
  'plugin-server': {
    args: ['plugin-server', '--config', PATHS.configFile],
    ports: [
      { name: 'grpc', containerPort: CONTAINER_GRPC_PORT },
      { name: 'http', containerPort: CONTAINER_HTTP_PORT },
    ],
    readinessProbe: { httpGet: { path: '/readyz', port: 'http' }, periodSeconds: 10 },
    livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 20, failureThreshold: 6 },
    // No CPU limit (throttling would stall streams; requests reserve the share), ephemeral storage bounds logs.
    resources: {
      requests: { cpu: '100m', memory: '256Mi', 'ephemeral-storage': '64Mi' },
      limits: { memory: '2Gi', 'ephemeral-storage': '512Mi' },
    },
    httpService: { name: NAMES.pluginServer, port: CONTAINER_HTTP_PORT, targetPort: 'http' },
  },
  agent: {
    args: ['agent', '--config', PATHS.configFile],
    ports: [],
    readinessProbe: { ...agentProbe('/readyz'), periodSeconds: 15, timeoutSeconds: 5 },
    livenessProbe: { ...agentProbe('/healthz'), periodSeconds: 30, timeoutSeconds: 5, failureThreshold: 4 },
    resources: {
      requests: { cpu: '100m', memory: '128Mi', 'ephemeral-storage': '64Mi' },
      limits: { memory: '1Gi', 'ephemeral-storage': '256Mi' },
    },
  },
};
