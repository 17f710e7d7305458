#!/usr/bin/env node
// Entry point of the `scale-agent` CLI: oclif finds the compiled commands in dist/src/cli/commands.
import { execute } from '@oclif/core';

await execute({ dir: import.meta.url });
