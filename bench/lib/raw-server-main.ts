// Runs the transport baseline server in its own process (like the real plugin-server) and prints its address.
import { startRawServer } from './raw-server.js';

const srv = await startRawServer();
process.stdout.write(`${srv.address}\n`);
process.on('SIGTERM', () => void srv.stop().then(() => process.exit(0)));
