// Runs the transport baseline server in its own process (like the real plugin-server) and prints its address;
// `--keep` keeps every message it receives (raw-server.ts).
import { startRawServer } from './raw-server.js';

const srv = await startRawServer({ keep: process.argv.includes('--keep') });
process.stdout.write(`${srv.address}\n`);
process.on('SIGTERM', () => void srv.stop().then(() => process.exit(0)));
