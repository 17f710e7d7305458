/** A check worker's thread (check-pool.ts): checks each batch it is given and answers with its id. */
import { parentPort } from 'node:worker_threads';
import { checkBatch, type CheckBatch } from './check-batch.js';

parentPort!.on('message', (m: { id: number; batch: CheckBatch }) => {
  let reply;
  try {
    reply = { id: m.id, ...checkBatch(m.batch) };
  } catch (e) {
    reply = { id: m.id, crashed: e instanceof Error ? e.message : String(e) };
  }
  parentPort!.postMessage(reply);
});
