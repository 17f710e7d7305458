import { describe, expect, it } from 'vitest';
import { ForwardedRuns, runKey } from '../../../src/plugin-server/ops/forwarded-runs.js';

describe('forwarded runs and the cancels peers send for them', () => {
  it('a cancel that arrives before its forward makes the forward start aborted, with the reason', () => {
    const runs = new ForwardedRuns();
    expect(runs.cancel(runKey('op-1', 100), 'cancelled by ann')).toBe('kept');
    const run = runs.start(runKey('op-1', 100));
    expect(run.signal.aborted).toBe(true);
    expect(run.signal.reason).toBe('cancelled by ann');
    // Used up: the same run forwarded again (the sender's retry) is not cancelled twice over by the one request.
    expect(runs.start(runKey('op-1', 100)).signal.aborted).toBe(false);
  });

  it('a cancel of a run under way aborts it; after its end, a cancel is kept for a later forward instead', () => {
    const runs = new ForwardedRuns();
    const run = runs.start(runKey('op-1', 100));
    expect(run.signal.aborted).toBe(false);
    expect(runs.cancel(runKey('op-1', 100), 'stop')).toBe('aborted');
    expect(run.signal.aborted).toBe(true);
    run.end();
    expect(runs.cancel(runKey('op-1', 100), 'again')).toBe('kept');
  });

  it('a cancel of an earlier run of the operation does not touch its resumed run (queued anew)', () => {
    const runs = new ForwardedRuns();
    runs.cancel(runKey('op-1', 100), 'old');
    const resumed = runs.start(runKey('op-1', 200));
    expect(resumed.signal.aborted).toBe(false);
    expect(runs.cancel(runKey('op-1', 200), 'new')).toBe('aborted');
    expect(resumed.signal.reason).toBe('new');
  });

  it('keeps a bounded number of early cancels, dropping the oldest first', () => {
    const runs = new ForwardedRuns(3);
    for (const op of ['a', 'b', 'c', 'd']) runs.cancel(runKey(op, 1), `stop ${op}`);
    expect(runs.start(runKey('a', 1)).signal.aborted).toBe(false);
    for (const op of ['b', 'c', 'd']) expect(runs.start(runKey(op, 1)).signal.reason).toBe(`stop ${op}`);
  });

  it('the end of a superseded run leaves the newer run of the same key cancellable', () => {
    const runs = new ForwardedRuns();
    const first = runs.start(runKey('op-1', 100));
    const second = runs.start(runKey('op-1', 100));
    first.end();
    expect(runs.cancel(runKey('op-1', 100), 'stop')).toBe('aborted');
    expect(second.signal.aborted).toBe(true);
  });
});
