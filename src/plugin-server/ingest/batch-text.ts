/**
 * The text of a large batch's objects, cut from one string (cache/shared-text.ts says why and what it costs).
 *
 * The decoded objects are views into the received message, so one Latin-1 decode of the span they cover gives a
 * string in which every byte offset is a character offset: an object's text is then `substring`, which V8 makes a
 * small slice instead of a copy. Latin-1 equals UTF-8 only for ASCII, so an object with any other byte is decoded
 * as UTF-8 on its own, as before.
 */
import { isAscii } from 'node:buffer';
import { SharedText } from '../cache/shared-text.js';

/**
 * Strings larger than this are allocated in V8's large-object space, which the young-generation collector never
 * copies (V8's largest regular object is 128 KiB with its default 256 KiB pages). Smaller batches, such as a watch's
 * trickle, keep one string per object: slicing would save them nothing.
 */
export const SHARED_TEXT_MIN_BYTES = 128 * 1024;

export interface BatchText {
  readonly shared: SharedText;
  /** The text of `bytes`, or undefined when it is not ASCII or lies outside the span (decode it on its own). */
  textOf(bytes: Uint8Array): string | undefined;
}

export function batchText(objects: readonly Uint8Array[]): BatchText | undefined {
  const first = objects.find((o) => o.byteLength > 0);
  if (!first) return undefined;
  const buffer = first.buffer;
  let start = Number.MAX_SAFE_INTEGER;
  let end = 0;
  for (const o of objects) {
    if (o.byteLength === 0) continue;
    if (o.buffer !== buffer) return undefined; // not one message (cannot happen with the generated decoder)
    start = Math.min(start, o.byteOffset);
    end = Math.max(end, o.byteOffset + o.byteLength);
  }
  if (end - start < SHARED_TEXT_MIN_BYTES) return undefined;
  // The span also holds the protobuf framing between objects (about a tenth of it for 1 KB objects): cheaper to
  // carry than a copy of each object.
  const whole = Buffer.from(buffer, start, end - start).toString('latin1');
  const shared = new SharedText(whole.length);
  return {
    shared,
    textOf(bytes) {
      if (bytes.buffer !== buffer || !isAscii(bytes)) return undefined;
      const at = bytes.byteOffset - start;
      return whole.substring(at, at + bytes.byteLength);
    },
  };
}
