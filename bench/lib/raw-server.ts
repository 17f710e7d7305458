/**
 * The transport baseline: a bare grpc-js server on the same Connect method that decodes nothing and stores
 * nothing (or, with `keep`, only keeps each message's bytes). It answers Hello with a Welcome and acks each data
 * message by count, so the same fake agent (same bytes, same flow-control window) can push to it. What it sustains
 * is the raw grpc-js limit on this machine.
 */
import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { DEFAULT_MAX_UNACKED_BYTES, ServerMessage } from '../../src/shared/proto.js';

export async function startRawServer(
  options: { keep?: boolean } = {},
): Promise<{ address: string; stop(): Promise<void> }> {
  // With `keep`, every data message received stays referenced until the process ends: the least any cache must do
  // is hold the bytes it was sent, and on a machine where a page touched for the first time is expensive that alone
  // costs what the bare transport does not pay (stream-throughput.ts measures both).
  const kept: Buffer[] = [];
  const server = new Server({
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    'grpc.max_send_message_length': 64 * 1024 * 1024,
  });
  const encode = (m: Parameters<typeof ServerMessage.fromPartial>[0]) =>
    Buffer.from(ServerMessage.encode(ServerMessage.fromPartial(m)).finish());
  server.register(
    '/scaleagent.v1.AgentService/Connect',
    (call: ServerDuplexStream<Buffer, Buffer>) => {
      let received = 0;
      call.on('data', (message: Buffer) => {
        if (options.keep && received > 0) kept.push(message);
        if (received++ === 0) {
          call.write(
            encode({
              welcome: {
                sessionId: 'raw',
                serverVersion: 'raw-baseline',
                maxUnackedBytes: DEFAULT_MAX_UNACKED_BYTES,
                maxMessageBytes: 64 * 1024 * 1024,
                heartbeatIntervalSeconds: 15,
              },
            }),
          );
        } else {
          call.write(encode({ ack: { seq: received - 1 } }));
        }
      });
      call.on('end', () => call.end());
      call.on('error', () => {});
    },
    (b: Buffer) => b,
    (b: Buffer) => b,
    'bidi',
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  return {
    address: `127.0.0.1:${port}`,
    stop: () => new Promise<void>((r) => server.tryShutdown(() => r())),
  };
}
