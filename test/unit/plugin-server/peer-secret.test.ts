import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PeerSecret } from '../../../src/plugin-server/auth/peer-secret.js';

const SECRET = 'a'.repeat(64);

function secretFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'peer-secret-')), 'secret');
  writeFileSync(file, text);
  return file;
}

describe('PeerSecret', () => {
  it('verifies the file’s secret and nothing else, and presents it as a bearer token', () => {
    const peer = PeerSecret.fromFile(secretFile(`${SECRET}\n`));
    expect(peer.verifies(SECRET)).toBe(true);
    expect(peer.verifies(`${SECRET}x`)).toBe(false);
    expect(peer.verifies('')).toBe(false);
    expect(peer.verifies(undefined)).toBe(false);
    expect(peer.authorization()).toBe(`Bearer ${SECRET}`);
  });

  it('refuses a short secret at start, naming the file', () => {
    const file = secretFile('short');
    expect(() => PeerSecret.fromFile(file)).toThrow(`http.peerAuth.secretFile ${file}: the peer secret must be`);
  });

  it('a rotated file applies at once; the previous secret is still accepted while the rotation rolls out', () => {
    const file = secretFile(SECRET);
    const peer = PeerSecret.fromFile(file);
    const next = 'b'.repeat(65);
    writeFileSync(file, next);
    expect(peer.authorization()).toBe(`Bearer ${next}`);
    expect(peer.verifies(next)).toBe(true);
    expect(peer.verifies(SECRET)).toBe(true);
  });

  it('a bad rotation keeps the secret the replicas share', () => {
    const file = secretFile(SECRET);
    const peer = PeerSecret.fromFile(file);
    writeFileSync(file, 'two words');
    expect(peer.verifies(SECRET)).toBe(true);
    expect(peer.authorization()).toBe(`Bearer ${SECRET}`);
  });

  it('derived from the store’s URL: equal for replicas given one URL, different for another URL', () => {
    const url = 'mysql://sa:pw@db:3306/scale';
    const a = PeerSecret.fromStore(url);
    const b = PeerSecret.fromStore(url);
    const token = a.authorization().replace(/^Bearer /, '');
    expect(token).not.toContain('pw');
    expect(b.verifies(token)).toBe(true);
    expect(PeerSecret.fromStore('mysql://sa:other@db:3306/scale').verifies(token)).toBe(false);
  });
});
