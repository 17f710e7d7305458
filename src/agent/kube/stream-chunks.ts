import type { ClientHttp2Stream } from 'node:http2';

/**
 * The chunks of a streamed API server answer (a watch, a streaming list), read with listeners instead of the
 * stream's async iterator. On Node 24.20+ (nodejs/node#65677) iterating a stream that closed before the iteration
 * began fails with "Premature close" and drops what the stream still held: a watch answered whole at once — a 410
 * Gone ERROR event, the API server's last events before a timeout — lost its events, and a 410 taken for an ordinary
 * failure was retried from the same expired resourceVersion instead of relisting. readAnswer (client.ts) reads whole
 * answers the same way.
 *
 * At most two chunks ahead of the consumer: the stream is paused when two are waiting and resumed when the consumer
 * has taken them, so a consumer that stops pulling (its queue full) stops the stream, and HTTP/2 flow control stops
 * the API server. Ends at the stream's end; throws the stream's error, or an error when it closed without its end, after
 * yielding every chunk that arrived.
 */
export async function* streamChunks(stream: ClientHttp2Stream): AsyncGenerator<Buffer, void, undefined> {
  const queue: Buffer[] = [];
  let ended = stream.readableEnded;
  let closed = false;
  let failure: Error | undefined;
  /** Closed (or destroyed) before its end: data it still holds may follow, and must not be paused again. */
  let closing = false;
  let wake: (() => void) | undefined;
  const signal = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const reset = (): Error | undefined => {
    const code = stream.rstCode;
    return code !== undefined && code !== 0
      ? new Error(`stream reset by the API server (HTTP/2 code ${code}) before its end`)
      : undefined;
  };
  const onData = (chunk: Buffer): void => {
    queue.push(chunk);
    // Two chunks ahead of the reader at most: it takes the next without waiting, and a reader that stopped pulling
    // holds no more than that.
    if (queue.length >= 2 && !closing) stream.pause();
    signal();
  };
  const onEnd = (): void => {
    ended = true;
    signal();
  };
  const onError = (e: Error): void => {
    failure ??= e;
    signal();
  };
  // After its end, the close says whether the answer was whole: Node ends a stream the server reset (RST_STREAM with
  // an error code) as if it were, and only the close carries the code. Before its end, Node may still hold the
  // answer's last data and its end (a paused stream whose END_STREAM came, or one that closed before this reader
  // attached): let them flow out, and if no end has come by the next turn of the event loop, the answer stopped short.
  const onClose = (): void => {
    if (closed) return;
    closed = true;
    if (ended) {
      signal();
      return;
    }
    closing = true;
    stream.resume();
    setImmediate(() => {
      if (ended || failure) return;
      failure = reset() ?? new Error('stream closed before its end');
      signal();
    });
  };
  stream.on('data', onData);
  stream.once('end', onEnd);
  stream.on('error', onError);
  stream.once('close', onClose);
  if (stream.destroyed) onClose();
  try {
    for (;;) {
      const chunk = queue.shift();
      if (chunk) {
        yield chunk;
        continue;
      }
      if (failure) throw failure;
      if (ended && closed) {
        const e = reset();
        if (e) throw e;
        return;
      }
      const next = new Promise<void>((resolve) => (wake = resolve));
      if (!closing && !ended && stream.isPaused()) stream.resume();
      await next;
    }
  } finally {
    // The error listener stays: the caller closes the stream after this (an early stop leaves it open and paused),
    // and an 'error' with no listener would be thrown.
    stream.off('data', onData);
    stream.off('end', onEnd);
    stream.off('close', onClose);
  }
}
