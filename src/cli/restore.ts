// `tollgate restore FILE`: a backup unpacked into an empty data dir under its lock, its database loaded and an
// audit row of the restore written into it. The backup code, PGlite and the database are imported lazily.
import path from 'node:path';
import type { Config } from '../config.js';
import { acquireDataDirLock } from '../platform/data-dir-lock.js';
import { cliCaller } from './caller.js';
import { UsageError } from './errors.js';

/** `tollgate restore FILE`: into an empty data dir, under its lock (no instance can start on it meanwhile). */
export async function restore(config: Config, file: string): Promise<number> {
  if (config.databaseUrl) throw new UsageError('restore loads an embedded backup; with DATABASE_URL restore with pg_restore (docs/operations.md, Backups)');
  const fs = await import('node:fs');
  if (!fs.existsSync(file)) throw new UsageError(`no such file: ${file}`);
  const dataDir = path.resolve(config.dataDir);
  if (fs.existsSync(dataDir) && fs.readdirSync(dataDir).length > 0) {
    console.error(`tollgate: ${dataDir} is not empty: restore needs an empty data dir (set TOLLGATE_DATA_DIR to a new directory)`);
    return 2;
  }
  const lock = await acquireDataDirLock(dataDir, { command: 'restore' });
  try {
    const [{ restoreBackup }, { PGlite }, { openConfiguredDatabase }, { AuditLog }, { default: pino }] = await Promise.all([
      import('../admin/backup.js'),
      import('@electric-sql/pglite'),
      import('../platform/configured-database.js'),
      import('../platform/audit.js'),
      import('pino'),
    ]);
    const restored = await restoreBackup(file, dataDir, async (pgDir, tarball) => {
      const pg = await PGlite.create(pgDir, { loadDataDir: tarball });
      await pg.close();
    });
    // The restore is an operator action too: its row goes into the restored database (migrated to this release).
    const database = await openConfiguredDatabase(config);
    try {
      await new AuditLog(database.db, pino({ level: 'silent' })).record({
        action: 'backup.restore',
        actor: { kind: 'operator', id: cliCaller().operator },
        target: path.resolve(file),
        projectId: null,
        requestId: cliCaller().requestId,
        via: 'cli',
        outcome: 'ok',
        detail: { backupCreatedAt: restored.manifest.createdAt, chainBlock: restored.manifest.chainBlock },
      });
    } finally {
      await database.close();
    }
    console.log(`restored ${file} (taken ${restored.manifest.createdAt}, chain at block ${restored.manifest.chainBlock ?? 'n/a'}, ${restored.files} data dir files) into ${dataDir}`);
    console.log('start it with: npm start (or tollgate serve) with this TOLLGATE_DATA_DIR');
    return 0;
  } catch (error) {
    // Half a restore is no restore: leave the data dir empty again for the next try.
    const fs = await import('node:fs');
    for (const entry of fs.readdirSync(dataDir)) if (entry !== 'lock.sock' && entry !== 'instance.json') fs.rmSync(path.join(dataDir, entry), { recursive: true, force: true });
    throw error;
  } finally {
    await lock.release();
  }
}
