// Tests that run the real CLI or server spawn bin/tollgate.js, which rebuilds dist/ when src/ changed.
// Building once here, before any worker starts, keeps that out of every spawned child's timing.
import { execFileSync } from 'node:child_process';

export default function buildOnce(): void {
  execFileSync(process.execPath, ['bin/build.js'], { stdio: 'inherit' });
}
