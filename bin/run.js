#!/usr/bin/env node
// Entry point of the `scale-agent` CLI: oclif finds the compiled commands in dist/src/cli/commands.
import process from 'node:process';
import { execute } from '@oclif/core';

// Without SHELL, oclif's config asks the OS for the user's login shell (os.userInfo()), which throws for a uid with
// no passwd entry: how the generated pods run the image (runAsUser 10001) and how OpenShift runs any pod. The shell
// only matters to oclif's completion helpers.
process.env.SHELL ??= '/bin/sh';

await execute({ dir: import.meta.url });
