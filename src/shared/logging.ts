import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/**
 * The runtimes' logger: JSON lines on stderr so stdout stays free for `--json` output. Paths that could
 * carry credentials are redacted here once, instead of trusting every call site.
 */
export function createLogger(options: { name: string; level?: string } & Pick<LoggerOptions, 'base'>): Logger {
  return pino(
    {
      name: options.name,
      level: options.level ?? process.env.SCALE_AGENT_LOG_LEVEL ?? 'info',
      base: options.base,
      redact: {
        paths: ['*.token', '*.password', '*.kubeconfigContents', '*.authorization', '*.headers.authorization'],
        censor: '[redacted]',
      },
    },
    pino.destination({ fd: 2, sync: false }),
  );
}
