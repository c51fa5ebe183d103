#!/usr/bin/env node
// Runs the compiled build in dist/, rebuilding it first when src/ changed (about a second), so
// `npm install && npm start` needs no separate build step and a restart pays no compile.
import { ensureBuilt, ensureWebBuilt } from './build.js';

await ensureBuilt();
// Only the service serves the pages: other commands (help, status, migrate) never wait for Vite.
if (process.argv[2] === 'serve') await ensureWebBuilt();
process.setSourceMapsEnabled(true);
await import('../dist/main.js');
