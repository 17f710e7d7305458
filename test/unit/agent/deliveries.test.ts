/**
 * The agent's record of which operation ids arrived on which of its sessions (src/agent/deliveries.ts): it may say
 * "never arrived" only when it knows, so that a JSON patch delivered again is run only when no earlier delivery can
 * have applied it.
 */
import { describe, expect, it } from 'vitest';
import { DeliveryLog } from '../../../src/agent/deliveries.js';

describe('DeliveryLog', () => {
  it('says never arrived only when every named session was ours and none brought the id', () => {
    const log = new DeliveryLog();
    log.opened('s1');
    log.opened('s2');
    log.arrived('s2', 't.0');
    expect(log.neverArrived('t.1', ['s1'])).toBe(true);
    expect(log.neverArrived('t.1', ['s1', 's2'])).toBe(true);
    // Brought on s2; a session not ours (another process, a peer replica's forward); no session named at all.
    expect(log.neverArrived('t.0', ['s1', 's2'])).toBe(false);
    expect(log.neverArrived('t.1', ['s1', 'replica:b'])).toBe(false);
    expect(log.neverArrived('t.1', [])).toBe(false);
  });

  it('a session past its bound, or forgotten past the session bound, can no longer prove an absence', () => {
    const log = new DeliveryLog({ maxSessions: 2, maxIds: 3 });
    log.opened('full');
    for (const id of ['a', 'b', 'c']) log.arrived('full', id);
    expect(log.neverArrived('z', ['full'])).toBe(true);
    log.arrived('full', 'd');
    expect(log.neverArrived('z', ['full'])).toBe(false);
    expect(log.neverArrived('a', ['full'])).toBe(false);
    log.opened('s2');
    log.opened('s3');
    // 'full' was the oldest of three: forgotten, so unknown.
    expect(log.neverArrived('z', ['s2'])).toBe(true);
    log.arrived('s2', 'x');
    expect(log.neverArrived('z', ['full', 's2'])).toBe(false);
  });

  it('bounds the ids of all sessions together, forgetting the oldest sessions first', () => {
    // An agent that reconnects under steady operations: many sessions, each with a few ids.
    const log = new DeliveryLog({ maxSessions: 64, maxIds: 10 });
    for (let s = 1; s <= 6; s++) {
      log.opened(`s${s}`);
      for (let i = 0; i < 4; i++) log.arrived(`s${s}`, `s${s}.op${i}`);
    }
    expect(log.size).toBeLessThanOrEqual(10);
    // The newest sessions still prove absences; the oldest were forgotten, so they no longer can.
    expect(log.neverArrived('z', ['s6'])).toBe(true);
    expect(log.neverArrived('s6.op3', ['s6'])).toBe(false);
    expect(log.neverArrived('z', ['s5'])).toBe(true);
    expect(log.neverArrived('z', ['s1'])).toBe(false);
    // A repeat of an id already recorded costs nothing.
    log.arrived('s6', 's6.op3');
    expect(log.size).toBeLessThanOrEqual(10);
  });

  it('one session that alone reaches the bound stops recording and holds nothing', () => {
    const log = new DeliveryLog({ maxIds: 5 });
    log.opened('old');
    log.arrived('old', 'o.0');
    log.opened('busy');
    for (let i = 0; i < 6; i++) log.arrived('busy', `b.${i}`);
    expect(log.neverArrived('z', ['old'])).toBe(false);
    expect(log.neverArrived('z', ['busy'])).toBe(false);
    expect(log.size).toBe(0);
  });
});
