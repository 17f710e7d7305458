/**
 * What every fault of the CI subset must leave behind, whatever it did meanwhile (shared by test/e2e/faults/).
 */
import { expect } from 'vitest';
import type { FaultResult } from '../../infra/faults/index.js';

/** The cache equals the API server; every operation ended once, succeeded or failed-retryable. */
export function expectSurvived(r: FaultResult): void {
  expect(r.diff).toMatchObject({ equal: true, missing: [], extra: [], stale: [] });
  expect(r.diff.compared).toBeGreaterThan(0);
  expect(r.ops.lost, JSON.stringify(r.ops)).toEqual([]);
  expect(r.ops.duplicates).toEqual([]);
  expect(r.ops.failed).toEqual([]);
  // Operations really ran through the fault (the check above is not vacuous).
  expect(r.ops.posted).toBeGreaterThan(0);
  expect(r.ops.outcomes.succeeded + r.ops.outcomes['failed-retryable']).toBe(r.ops.posted);
  expect(r.churn.writes).toBeGreaterThan(0);
}
