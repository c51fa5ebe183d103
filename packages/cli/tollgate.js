#!/usr/bin/env node
// `npx tollgate` in the checkout. The bin lives in this workspace, not in the root package.json: npm links it
// into node_modules/.bin, where npx finds and runs it at once. A bin the root package declares makes npx treat
// the command as the checkout itself: it reads the whole installed tree twice (the project's and its npx-cache
// link's, ~1.6 s of CPU on 2 cores) before it starts anything (bench/RESULTS.md, "npx tollgate --help").
import '../../bin/tollgate.js';
