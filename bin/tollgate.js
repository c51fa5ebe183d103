#!/usr/bin/env node
// Runs the compiled build in dist/, rebuilding it first when src/ changed (about a second), so
// `npm install && npm start` needs no separate build step and a restart pays no compile.
import { ensureBuilt, ensureWebBuilt } from './build.js';

// What a start waits for, said as it happens (a first start builds both, the web pages for a minute or more);
// on stderr, so stdout stays the command's own (JSON logs, `--json` output).
const say = (line) => process.stderr.write(`tollgate: ${line}\n`);
await ensureBuilt(say);
// Only the service serves the pages: other commands (help, status, migrate) never wait for Vite.
if (process.argv[2] === 'serve') await ensureWebBuilt(say);
process.setSourceMapsEnabled(true);
await import('../dist/main.js');
