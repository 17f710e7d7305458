/**
 * The load generator as a command: simulates N agents × M accounts against a plugin-server.
 *
 *   npx tsx bench/fake-agents/main.ts --address 127.0.0.1:9091 --agents 100 --accounts 2 --objects 500 \
 *       --rate 10 --duration 30 [--ca ca.crt --cert agent.crt --key agent.key --server-name NAME]
 *
 * Prints one JSON object with what it sent (its own rates), so the server side is what gets measured.
 */
import { readFileSync } from 'node:fs';
import { credentials } from '@grpc/grpc-js';
import { flags } from '../lib/report.js';
import { runFleet } from './fleet.js';

const f = flags({
  address: { type: 'string', default: '127.0.0.1:9091' },
  agents: { type: 'string', default: '10' },
  accounts: { type: 'string', default: '1' },
  objects: { type: 'string', default: '100' },
  'object-bytes': { type: 'string', default: '1024' },
  batch: { type: 'string', default: '500' },
  rate: { type: 'string', default: '10' },
  duration: { type: 'string', default: '10' },
  wave: { type: 'string', default: '100' },
  prefix: { type: 'string', default: 'fake' },
  ca: { type: 'string' },
  cert: { type: 'string' },
  key: { type: 'string' },
  'server-name': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
});
if (f.help) {
  console.error(readFileSync(new URL(import.meta.url), 'utf8').split('*/')[0]);
  process.exit(0);
}
const creds = f.ca
  ? credentials.createSsl(
      readFileSync(String(f.ca)),
      f.key ? readFileSync(String(f.key)) : null,
      f.cert ? readFileSync(String(f.cert)) : null,
    )
  : credentials.createInsecure();
const report = await runFleet({
  address: String(f.address),
  credentials: creds,
  serverName: f['server-name'] ? String(f['server-name']) : undefined,
  agents: Number(f.agents),
  accountsPerAgent: Number(f.accounts),
  objectsPerAccount: Number(f.objects),
  objectBytes: Number(f['object-bytes']),
  batchSize: Number(f.batch),
  changesPerSecPerAgent: Number(f.rate),
  steadySeconds: Number(f.duration),
  wave: Number(f.wave),
  idPrefix: String(f.prefix),
});
const { agentsHandle, ...json } = report;
for (const a of agentsHandle) a.close();
process.stdout.write(`${JSON.stringify(json)}\n`);
process.exit(0);
