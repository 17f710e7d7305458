/**
 * Splits a watch response into its newline-delimited JSON events as the bytes arrive. The API server ends every
 * watch event with "\n" and JSON escapes newlines inside strings, so a newline always ends an event. Only the
 * unfinished tail is kept between chunks; a complete event is never copied more than once.
 */
export class JsonLineSplitter {
  private tail: Buffer | undefined;

  /** Returns the complete lines in `chunk` (and any unfinished line before it), without their newline. */
  push(chunk: Buffer): Buffer[] {
    const lines: Buffer[] = [];
    let start = 0;
    let nl = chunk.indexOf(0x0a);
    if (nl >= 0 && this.tail) {
      lines.push(Buffer.concat([this.tail, chunk.subarray(0, nl)]));
      this.tail = undefined;
      start = nl + 1;
      nl = chunk.indexOf(0x0a, start);
    }
    while (nl >= 0) {
      if (nl > start) lines.push(chunk.subarray(start, nl));
      start = nl + 1;
      nl = chunk.indexOf(0x0a, start);
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.tail = this.tail ? Buffer.concat([this.tail, rest]) : rest;
    }
    return lines.filter((l) => l.length > 0 && !(l.length === 1 && l[0] === 0x0d));
  }

  /** Bytes of an event still incomplete (held between chunks). */
  get pendingBytes(): number {
    return this.tail?.length ?? 0;
  }
}
