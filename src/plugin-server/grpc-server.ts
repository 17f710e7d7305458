import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import { ScaleAgentError } from '../shared/errors.js';
import type { Logger } from '../shared/logging.js';
import { AGENT_SERVICE_NAME, AgentServiceService, type AgentMessage, type ServerMessage } from '../shared/proto.js';
import type { PluginServerConfig } from './config.js';
import { addReflection } from './grpc-reflection.js';
import { widenAgentStreamWindows } from './grpc-windows.js';
import { reloadingTls, type TlsReloadMetrics } from './tls/index.js';

export interface GrpcEndpoint {
  server: Server;
  health: HealthImplementation;
  port: number;
  /**
   * Graceful shutdown: health turns NOT_SERVING and every connection gets an HTTP/2 GOAWAY (grpc-js tryShutdown),
   * so no client opens a new stream here; then `endStreams` ends the open streams (agents reconnect elsewhere);
   * connections still open after `graceMs` are destroyed.
   */
  stop(graceMs: number, endStreams: () => void): Promise<void>;
}

/**
 * The agent-facing gRPC server: AgentService plus grpc.health.v1.Health and server reflection, so grpcurl and
 * grpc_health_probe work against it.
 */
export async function startGrpcServer(
  config: PluginServerConfig,
  log: Logger,
  onConnect: (call: ServerDuplexStream<AgentMessage, ServerMessage>) => void,
  tlsMetrics: TlsReloadMetrics,
): Promise<GrpcEndpoint> {
  const server = new Server({
    'grpc.max_receive_message_length': config.limits.maxMessageBytes,
    'grpc.max_send_message_length': config.limits.maxMessageBytes,
    // Agents keep their one stream alive through load balancers with HTTP/2 pings; allow them.
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.http2.min_ping_interval_without_data_ms': 5000,
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
  });
  server.addService(AgentServiceService, { connect: onConnect });

  const health = new HealthImplementation({ '': 'NOT_SERVING', [AGENT_SERVICE_NAME]: 'NOT_SERVING' });
  health.addToServer(server);

  addReflection(server);

  const { credentials, stop: stopTls } = serverCredentials(config, log, tlsMetrics);
  // An agent may have maxUnackedBytes in flight, plus the one batch that crosses it.
  const narrowWindows = widenAgentStreamWindows(config.limits.maxUnackedBytes + config.limits.maxMessageBytes);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${config.grpc.host}:${config.grpc.port}`, credentials, (err, boundPort) => {
      if (err) {
        stopTls();
        narrowWindows();
        reject(
          new ScaleAgentError(
            'UNAVAILABLE',
            `cannot listen on ${config.grpc.host}:${config.grpc.port}: ${err.message}`,
            {
              cause: err,
            },
          ),
        );
      } else {
        resolve(boundPort);
      }
    });
  });
  health.setStatus('', 'SERVING');
  health.setStatus(AGENT_SERVICE_NAME, 'SERVING');

  return {
    server,
    health,
    port,
    stop: (graceMs, endStreams) =>
      new Promise<void>((resolve) => {
        stopTls();
        narrowWindows();
        health.setStatus('', 'NOT_SERVING');
        health.setStatus(AGENT_SERVICE_NAME, 'NOT_SERVING');
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        // GOAWAY before the streams end: a client learns this connection takes no new stream before its stream's
        // status arrives, so its reconnect dials anew (through the load balancer) instead of reusing the connection.
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
        endStreams();
      }),
  };
}

function serverCredentials(
  config: PluginServerConfig,
  log: Logger,
  metrics: TlsReloadMetrics,
): { credentials: ServerCredentials; stop(): void } {
  const tls = config.grpc.tls;
  if (!tls) {
    log.warn(
      { host: config.grpc.host, port: config.grpc.port },
      'gRPC without TLS: agent traffic (cluster state) is plaintext and agents are not authenticated; configure grpc.tls',
    );
    return { credentials: ServerCredentials.createInsecure(), stop: () => undefined };
  }
  return reloadingTls(tls, { log, metrics });
}
