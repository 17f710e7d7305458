// Writes oclif.manifest.json after the TypeScript build. Without it oclif imports every command module on each
// start to list them, so an agent or plugin-server process would also load the compiler (cdk8s, ~90 MB RSS)
// and the other runtime. With it, only the command being run is imported.
import { writeFileSync, rmSync } from 'node:fs';
import process from 'node:process';
import { Config } from '@oclif/core';

// A stale manifest would be read instead of the commands; remove it before loading.
rmSync('oclif.manifest.json', { force: true });
const config = await Config.load({ root: process.cwd() });
const plugin = config.plugins.get(config.pjson.name);
if (!plugin || Object.keys(plugin.manifest.commands).length === 0) {
  process.stderr.write('oclif-manifest: no commands found; did the TypeScript build run?\n');
  process.exit(1);
}
writeFileSync('oclif.manifest.json', JSON.stringify(plugin.manifest, null, 2) + '\n');
process.stderr.write(`oclif-manifest: ${Object.keys(plugin.manifest.commands).length} commands\n`);
