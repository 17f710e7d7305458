import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * Ports are taken below the kernel's ephemeral range (Linux: net.ipv4.ip_local_port_range, 32768–60999 by default).
 * A port the kernel hands out for `listen(0)` comes from that range, and so does the local port of every outgoing
 * connection the tests make: between freePort() returning such a port and the server process binding it, one of
 * those connections could take it (seen as EADDRINUSE when a replica started during a busy suite). Below the range
 * only another freePort() caller can collide: the per-worker slices and the per-process memory prevent that, and
 * PluginServerProcess starts again on other ports if it still happens.
 */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32768;
  } catch {
    return 32768;
  }
}

const TOP = ephemeralLow();
const BOTTOM = Math.max(1025, TOP - 12_000);
/**
 * Test files run in parallel worker processes (vitest numbers them in VITEST_POOL_ID); each takes its own slice of
 * the range, so two workers never pick the same port. The main process (global setup, benchmarks) takes slice 0.
 */
const SLICES = 9;
const slice = Math.min(SLICES - 1, Math.max(0, Number(process.env.VITEST_POOL_ID ?? 0) || 0));
const width = Math.floor((TOP - BOTTOM) / SLICES);
const LOW = BOTTOM + slice * width;
const HIGH = LOW + width;
const handedOut = new Set<number>();

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** A loopback port that was free a moment ago, outside the range the kernel gives to outgoing connections. */
export async function freePort(): Promise<number> {
  if (HIGH - LOW >= 500) {
    for (let i = 0; i < 100; i++) {
      const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
      if (handedOut.has(port)) continue;
      // Reserved before the check, so concurrent callers in this process never pick the same port.
      handedOut.add(port);
      if (await canListen(port)) return port;
      handedOut.delete(port);
    }
  }
  // A machine whose ephemeral range leaves no room below it: the kernel's choice, with the race above.
  return kernelPort();
}
