import { existsSync } from 'node:fs';
import { Flags } from '@oclif/core';

/**
 * `--config` of the runtimes: a file or a directory of them, repeatable (merged in order, later over earlier:
 * docs/config-overlays.md). oclif's file flag refuses directories, hence this one.
 */
export function configFlag(summary: string, env: string) {
  return Flags.custom<string>({
    char: 'c',
    summary,
    required: true,
    multiple: true,
    env,
    parse: (input) => {
      if (!existsSync(input)) return Promise.reject(new Error(`No file or directory found at ${input}`));
      return Promise.resolve(input);
    },
  })();
}
