import fs from 'node:fs';
import path from 'node:path';

/**
 * Reads a dev secret kept in the data dir, creating it on first use (mode 0600). Production
 * supplies these through the environment instead; the data dir copy is the embedded default.
 */
export function loadOrCreateDevSecret(dataDir: string | null, name: string, generate: () => string): string {
  if (!dataDir) return generate();
  const file = path.join(dataDir, 'secrets', name);
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const value = generate();
  try {
    // wx: if another process created it first, keep theirs.
    fs.writeFileSync(file, `${value}\n`, { mode: 0o600, flag: 'wx' });
    return value;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return fs.readFileSync(file, 'utf8').trim();
  }
}
