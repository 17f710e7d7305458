import type { Command } from '@oclif/core';
import { exitCodeOf, formatDetail, isScaleAgentError } from '../shared/errors.js';

/**
 * The edge of the long-running commands (agent, plugin-server): starts the service, turns a startup error into
 * located messages and the catalogue's exit code, then runs until SIGTERM/SIGINT and stops it cleanly.
 */
export async function serveUntilSignal(
  command: Command,
  start: () => Promise<{ stop(): Promise<void> }>,
): Promise<void> {
  let service: { stop(): Promise<void> };
  try {
    service = await start();
  } catch (e) {
    if (isScaleAgentError(e)) {
      for (const d of e.details) command.logToStderr(formatDetail(d));
      command.error(`${e.code}: ${e.message}`, { exit: exitCodeOf(e) });
    }
    throw e;
  }
  await new Promise<void>((resolve) => {
    const shutdown = (): void => {
      process.off('SIGTERM', shutdown);
      process.off('SIGINT', shutdown);
      void service.stop().finally(resolve);
    };
    process.on('SIGTERM', shutdown);
    process.on('SIGINT', shutdown);
  });
}
