/**
 * The one grpc-js stream of the bare floors (bare-relay-main.ts, bare-change-relay-main.ts): raw Buffers on a bidi
 * method, no protobuf, no TLS, on loopback.
 */
import {
  Server,
  ServerCredentials,
  credentials,
  makeGenericClientConstructor,
  type ClientDuplexStream,
  type ServerDuplexStream,
} from '@grpc/grpc-js';

const identity = (b: Buffer): Buffer => b;

/** Serves `method` (`/service/Method`) on 127.0.0.1; resolves with the port. */
export async function serveBidi(
  method: string,
  onCall: (c: ServerDuplexStream<Buffer, Buffer>) => void,
): Promise<number> {
  const grpc = new Server();
  grpc.register(method, onCall, identity, identity, 'bidi');
  return new Promise<number>((resolve, reject) =>
    grpc.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
}

/** Opens the bidi `method` on `address` (host:port). grpc-js opens it lazily, with the first write. */
export function dialBidi(address: string, method: string): ClientDuplexStream<Buffer, Buffer> {
  const Client = makeGenericClientConstructor({}, 'BareFloor');
  return new Client(address, credentials.createInsecure()).makeBidiStreamRequest(method, identity, identity);
}
