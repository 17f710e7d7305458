import type { BaseComponent } from './model.js';
import { AGENT_HEALTH_PORT, CONTAINER_GRPC_PORT, CONTAINER_HTTP_PORT, NAMES, PATHS } from './names.js';

/**
 * The agent runs on jemalloc (installed in the image, Dockerfile) with a background thread returning freed pages:
 * glibc's malloc kept ~110 MB of buffers freed after an initial sync for the life of the process; jemalloc gives
 * them back within seconds (bench/profiles/agent-memory.md: 100 accounts × 10k objects 213 → 99 MB RSS). A missing
 * library (another image) only makes the loader print a warning.
 */
export const AGENT_ALLOCATOR_ENV = [
  { name: 'LD_PRELOAD', value: '/usr/local/lib/libjemalloc.so.2' },
  { name: 'MALLOC_CONF', value: 'background_thread:true' },
];

/** What each runtime needs from its pod, whatever the place: arguments, ports, probes, resources. */
export interface RuntimeProfile {
  args: string[];
  ports: { name: string; containerPort: number }[];
  readinessProbe: Record<string, unknown>;
  livenessProbe: Record<string, unknown>;
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  /** Environment of the container beyond what every pod gets. */
  env?: { name: string; value: string }[];
  /**
   * The ClusterIP Service in front of the HTTP port: the plugin-server's REST API, the agent's health port
   * (/metrics for Prometheus). Its port is named as the container's.
   */
  httpService?: { name: string; port: number; targetPort: string };
}

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
    // The health-only listener (config `health`); the admin endpoint, with account and watch listings, stays on loopback.
    ports: [{ name: 'health', containerPort: AGENT_HEALTH_PORT }],
    readinessProbe: { httpGet: { path: '/readyz', port: 'health' }, periodSeconds: 15, timeoutSeconds: 5 },
    livenessProbe: {
      httpGet: { path: '/healthz', port: 'health' },
      periodSeconds: 30,
      timeoutSeconds: 5,
      failureThreshold: 4,
    },
    resources: {
      requests: { cpu: '100m', memory: '128Mi', 'ephemeral-storage': '64Mi' },
      limits: { memory: '1Gi', 'ephemeral-storage': '256Mi' },
    },
    env: AGENT_ALLOCATOR_ENV,
    httpService: { name: NAMES.agent, port: AGENT_HEALTH_PORT, targetPort: 'health' },
  },
};
