import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  AgentMessage,
  ChangeType,
  compareResourceVersions,
  isNewerResourceVersion,
  parseApiVersion,
  ServerMessage,
} from '../../../src/shared/proto.js';

describe('wire protocol', () => {
  it('generated code matches proto/ (npm run proto:check)', () => {
    // Regenerates into a temporary directory with the pinned buf and ts-proto from node_modules and diffs.
    const out = execFileSync('bash', ['scripts/proto-gen.sh', '--check'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(out).toContain('src/proto matches proto/');
  }, 120_000);

  it('round-trips agent and server messages', () => {
    const msg: AgentMessage = {
      changeBatch: {
        seq: 42,
        observedAtMs: 1_700_000_000_123,
        changes: [
          {
            type: ChangeType.CHANGE_TYPE_MODIFIED,
            account: 'dev',
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            namespace: 'ns',
            name: 'web',
            uid: 'u',
            resourceVersion: '123',
            objectJson: Buffer.from('{"a":"ü"}'),
          },
        ],
      },
    };
    const back = AgentMessage.decode(AgentMessage.encode(msg).finish());
    expect(back.changeBatch?.seq).toBe(42);
    expect(back.changeBatch?.changes[0]?.resourceVersion).toBe('123');
    expect(Buffer.from(back.changeBatch!.changes[0]!.objectJson).toString()).toBe('{"a":"ü"}');
    const ack = ServerMessage.decode(ServerMessage.encode({ ack: { seq: 7 } }).finish());
    expect(ack).toEqual({ ack: { seq: 7 } });
  });

  it('orders resourceVersions as integers, never as strings', () => {
    expect(compareResourceVersions('9', '10')).toBe(-1);
    expect(compareResourceVersions('100', '99')).toBe(1);
    expect(compareResourceVersions('18446744073709551616', '18446744073709551615')).toBe(1);
    expect(compareResourceVersions('5', '5')).toBe(0);
    expect(compareResourceVersions('123456789012345678901', '123456789012345678902')).toBe(-1);
    expect(compareResourceVersions('0010', '9')).toBe(1);
    expect(compareResourceVersions('9', '0010')).toBe(-1);
    expect(compareResourceVersions('007', '7')).toBe(0);
    expect(compareResourceVersions('0', '00')).toBe(0);
    expect(compareResourceVersions('abc', '10')).toBeUndefined();
    expect(isNewerResourceVersion('10', '9')).toBe(true);
    expect(isNewerResourceVersion('9', '10')).toBe(false);
    expect(isNewerResourceVersion('10', '10')).toBe(false);
    expect(isNewerResourceVersion('x', undefined)).toBe(true);
    expect(isNewerResourceVersion('x', 'y')).toBe(true);
    expect(parseApiVersion('apps/v1')).toEqual({ group: 'apps', version: 'v1' });
    expect(parseApiVersion('v1')).toEqual({ group: '', version: 'v1' });
  });
});
