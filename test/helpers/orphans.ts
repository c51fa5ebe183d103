import fs from 'node:fs';
import path from 'node:path';

// A test that SIGKILLs a service and then fails before restarting it on the same data dir leaves that service's
// devchain running (a restart would have reaped it: src/chain/anvil.ts reapOrphan). Test files stop it themselves.

const readOr = (file: string) => {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
};

/** Kills the anvil whose pid file is in `dataDir`, if that pid still runs an anvil of that data dir. */
export function killOrphanedDevchain(dataDir: string): void {
  const pid = Number(readOr(path.join(dataDir, 'chain', 'anvil.pid')).trim()) || 0;
  if (!pid) return;
  const stat = readOr(`/proc/${pid}/stat`);
  const running = stat !== '' && !/^\d+ \(.*\) [ZX]/s.test(stat);
  if (running && readOr(`/proc/${pid}/cmdline`).split('\0').join(' ').includes(dataDir)) process.kill(pid, 'SIGKILL');
}
