import { describe, expect, it } from 'vitest';
import { JsonLineSplitter } from '../../../src/agent/kube/json-lines.js';

describe('JsonLineSplitter', () => {
  it('yields each complete line once, across arbitrary chunk boundaries', () => {
    const events = [
      { type: 'ADDED', n: 1 },
      { type: 'MODIFIED', s: 'a\nb' },
      { type: 'DELETED', n: 3 },
    ];
    const text = events.map((e) => JSON.stringify(e)).join('\n') + '\n';
    for (let size = 1; size <= text.length; size++) {
      const s = new JsonLineSplitter();
      const out: unknown[] = [];
      for (let i = 0; i < text.length; i += size) {
        for (const line of s.push(Buffer.from(text.slice(i, i + size)))) out.push(JSON.parse(line.toString()));
      }
      expect(out).toEqual(events);
      expect(s.pendingBytes).toBe(0);
    }
  });

  it('keeps an unfinished line until its newline arrives', () => {
    const s = new JsonLineSplitter();
    expect(s.push(Buffer.from('{"a":'))).toEqual([]);
    expect(s.pendingBytes).toBe(5);
    expect(s.push(Buffer.from('1}\r\n\n{"b":2}\n')).map((b) => b.toString())).toEqual(['{"a":1}\r', '{"b":2}']);
  });
});
