import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { AgentServiceService } from '../shared/proto.js';

/** Largest HTTP/2 window (RFC 9113 §6.9.1). */
const MAX_WINDOW = 2 ** 31 - 1;

/**
 * HTTP/2 receive windows of agent streams, as large as the stream's own flow control lets an agent send unacknowledged
 * (`maxUnackedBytes`, plus the one batch it may send past it). grpc-js servers keep Node's default 64 KiB windows
 * (`grpc-node.flow_control_window` is read by its clients only: grpc/grpc-node#3058), so an agent sending an initial
 * sync waited for a WINDOW_UPDATE every 64 KiB, and read it only between the chunks of the list it was parsing: in
 * bench/profiles/initial-sync.md the first megabytes took ~0.9 s to arrive and the ingest pipeline sat idle. The
 * application's window still bounds what is in flight: a paused session reads nothing, so the HTTP/2 window refills
 * only as the store catches up. An agent that ignored its acks could have that many bytes buffered here before HTTP/2
 * stops it (64 KiB before): sized by limits.maxUnackedBytes and limits.maxMessageBytes.
 *
 * Applied from Node's `http2.server.stream.start` diagnostics channel (Node >= 24; without it the windows stay at
 * the default): the one public place a grpc-js server's HTTP/2 session can be reached. Only streams of
 * AgentService/Connect are touched. Returns the unsubscribe.
 */
export function widenAgentStreamWindows(bytes: number): () => void {
  const window = Math.min(MAX_WINDOW, bytes);
  const onStart = (message: unknown): void => {
    const { stream, headers } = message as { stream: ServerHttp2Stream; headers: IncomingHttpHeaders };
    if (headers[':path'] !== AgentServiceService.connect.path) return;
    const session = stream.session;
    if (!session || session.destroyed) return;
    if ((session.localSettings.initialWindowSize ?? 0) >= window) return;
    // The connection's window and every stream's (a SETTINGS change applies to open streams too).
    session.setLocalWindowSize(window);
    session.settings({ initialWindowSize: window });
  };
  subscribe('http2.server.stream.start', onStart);
  return () => unsubscribe('http2.server.stream.start', onStart);
}
