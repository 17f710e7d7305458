/**
 * A grpc-js client for AgentService.Connect that writes pre-encoded AgentMessage bytes. The bytes on the wire
 * are exactly the real protocol's; skipping per-send encoding keeps the load generator cheap, so benchmarks
 * measure the server, not the generator.
 */
import { Client, credentials, type ChannelCredentials, type ClientDuplexStream } from '@grpc/grpc-js';
import { AgentMessage, ServerMessage } from '../../src/shared/proto.js';

export type RawStream = ClientDuplexStream<Buffer, ServerMessage>;

export type AgentMessageInit = Parameters<typeof AgentMessage.fromPartial>[0];

/** Encodes a message given partially (unset fields take proto3 defaults, as on the wire). */
export function encodeAgentMessage(m: AgentMessageInit): Buffer {
  return Buffer.from(AgentMessage.encode(AgentMessage.fromPartial(m)).finish());
}

export class RawAgentClient {
  private readonly client: Client;

  constructor(address: string, creds: ChannelCredentials = credentials.createInsecure(), serverNameOverride?: string) {
    this.client = new Client(address, creds, {
      ...(serverNameOverride ? { 'grpc.ssl_target_name_override': serverNameOverride } : {}),
      'grpc.max_send_message_length': 64 * 1024 * 1024,
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
      // Each fake agent is its own connection, like real agents (one TCP+HTTP/2 connection per agent).
      'grpc.use_local_subchannel_pool': 1,
    });
  }

  connect(): RawStream {
    return this.client.makeBidiStreamRequest(
      '/scaleagent.v1.AgentService/Connect',
      (b: Buffer) => b,
      (b: Buffer) => ServerMessage.decode(b),
    );
  }

  close(): void {
    this.client.close();
  }
}
