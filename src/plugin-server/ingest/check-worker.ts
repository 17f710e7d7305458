/**
 * A check worker's thread (check-pool.ts): checks each batch it is given and answers with its id. The cache's
 * registered indexes come as module URLs and export names (a function cannot cross to a thread), imported here.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { IndexDefinition } from '../cache/store.js';
import { checkBatch, type CheckBatch } from './check-batch.js';

export interface CheckWorkerData {
  indexes: { module: string; export: string }[];
}

const { indexes: where } = workerData as CheckWorkerData;
// Messages that arrive meanwhile wait in the port until the listener below is added.
const indexes = await Promise.all(where.map(async (w) => (await import(w.module))[w.export] as IndexDefinition));

parentPort!.on('message', (m: { id: number; batch: CheckBatch }) => {
  let reply;
  try {
    reply = { id: m.id, ...checkBatch(m.batch, indexes) };
  } catch (e) {
    reply = { id: m.id, crashed: e instanceof Error ? e.message : String(e) };
  }
  parentPort!.postMessage(reply);
});
