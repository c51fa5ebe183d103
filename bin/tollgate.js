#!/usr/bin/env node
// Runs the compiled build in dist/, rebuilding it first when src/ changed (about a second), so
// `npm install && npm start` needs no separate build step and a restart pays no compile.
import { ensureBuilt } from './build.js';

await ensureBuilt();
process.setSourceMapsEnabled(true);
await import('../dist/main.js');
