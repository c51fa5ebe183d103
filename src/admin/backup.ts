// `tollgate backup` and `tollgate restore` of an embedded instance (PGlite and the devchain in the data dir):
// docs/operations.md#backups. On PostgreSQL, pg_dump is the tool (the same page says how).
//
// A backup is one .tar.gz: a manifest, PGlite's data directory (pg.tar), the devchain's state, and the rest of the
// data dir (dev secrets, the image store, agents' volumes). The database and the chain are taken at one moment
// while the instance serves: between two transactions, with no query running (Database.snapshot), the chain's
// state is dumped, then the database's files. Nothing can commit in between, so the chain holds everything the
// database says it sent; what the chain holds beyond that (a transaction sent, its outcome not yet written) is
// what a crash at that instant would leave, and the service recovers from that on start (its crash tests).
// The image store is copied after: it only grows (content-addressed blocks), so it holds every block the
// database names.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AppContext } from '../context.js';
import { AdminCommandError } from './errors.js';
import { readTar, TarWriter } from './tar.js';

export const BACKUP_FORMAT = 'tollgate-backup';
const MANIFEST = 'tollgate-backup.json';

/** What the data dir holds that is not copied as files: the database and chain (dumped instead), and this process's own. */
const NOT_COPIED = new Set(['pg', 'chain', 'admin.sock', 'lock.sock', 'instance.json']);

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  version: 1;
  createdAt: string;
  build: { commit: string; buildTime: string };
  network: string;
  /** The devchain's block at the moment of the backup; null when the chain is CHAIN_RPC_URL's (not in the backup). */
  chainBlock: number | null;
  files: number;
}

export interface BackupResult {
  file: string;
  bytes: number;
  databaseBytes: number;
  chainBlock: number | null;
  files: number;
  tookMs: number;
}

export async function createBackup(ctx: AppContext, out: string): Promise<BackupResult> {
  const started = Date.now();
  if (!ctx.database.snapshot) {
    throw new AdminCommandError('this instance runs on PostgreSQL (DATABASE_URL): back it up with pg_dump (docs/operations.md#backups)');
  }
  if (!path.isAbsolute(out)) throw new AdminCommandError('--out must be an absolute path');
  if (existsSync(out)) throw new AdminCommandError(`${out} exists: name a new file`);
  const devchain = ctx.chain.devchain;
  const { tarball, alongside: chainState } = await ctx.database.snapshot(async () => (devchain ? devchain.dumpState() : null));
  const partial = `${out}.partial-${randomUUID().slice(0, 8)}`;
  const writer = new TarWriter(partial);
  let files = 0;
  try {
    const chainBlock = chainState ? blockOf(chainState) : null;
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      version: 1,
      createdAt: new Date().toISOString(),
      build: { commit: ctx.build.commit, buildTime: ctx.build.buildTime },
      network: ctx.chain.network,
      chainBlock,
      files: 0,
    };
    // The manifest comes first so a restore can refuse a wrong file before writing anything.
    await writer.add(MANIFEST, Buffer.from(JSON.stringify(manifest, null, 2)));
    await writer.add('pg.tar', Buffer.from(await tarball.arrayBuffer()));
    if (chainState) await writer.add('chain/state.json', chainState);
    files = await copyTree(writer, ctx.config.dataDir, '');
    await writer.end();
    await rename(partial, out);
    return { file: out, bytes: (await stat(out)).size, databaseBytes: tarball.size, chainBlock, files, tookMs: Date.now() - started };
  } catch (error) {
    await writer.end().catch(() => undefined);
    await rm(partial, { force: true });
    throw error;
  }
}

/** The data dir's files, but for what is dumped instead or is this process's own (sockets, lock records). */
async function copyTree(writer: TarWriter, root: string, relative: string): Promise<number> {
  let count = 0;
  const entries = await readdir(path.join(root, relative), { withFileTypes: true }).catch(() => []);
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const rel = relative ? `${relative}/${entry.name}` : entry.name;
    if (!relative && NOT_COPIED.has(entry.name)) continue;
    if (entry.isDirectory()) {
      await writer.addDirectory(`data/${rel}`);
      count += await copyTree(writer, root, rel);
    } else if (entry.isFile()) {
      try {
        await writer.addFile(`data/${rel}`, path.join(root, rel), (await stat(path.join(root, rel))).mode & 0o777);
        count += 1;
      } catch (error) {
        // A file removed meanwhile (a temporary file of the image store) was not part of anything yet.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }
  return count;
}

const blockOf = (state: Buffer): number | null => {
  try {
    const parsed = JSON.parse(state.toString('utf8')) as { best_block_number?: string | number; block?: { number?: string | number } };
    const value = parsed.best_block_number ?? parsed.block?.number;
    return value === undefined ? null : Number(value);
  } catch {
    return null;
  }
};

export interface RestoreResult {
  dataDir: string;
  manifest: BackupManifest;
  files: number;
}

/**
 * Unpacks a backup into an empty data dir: the files, the chain's state where the devchain loads it, and the
 * database loaded into PGlite's directory. `tollgate serve` on it then starts where the backup was taken.
 */
export async function restoreBackup(file: string, dataDir: string, loadDatabase: (pgDir: string, tarball: Blob) => Promise<void>): Promise<RestoreResult> {
  let files = 0;
  let first = true;
  const kept = await readTar(file, (entry) => {
    const isFirst = first;
    first = false;
    if (entry.name === MANIFEST) return null;
    if (isFirst) throw new Error(`not a Tollgate backup (its first entry is not ${MANIFEST})`);
    if (entry.name === 'pg.tar') return null;
    if (entry.name === 'chain/state.json') return path.join(dataDir, 'chain', 'state.json');
    if (entry.name.startsWith('data/')) {
      if (entry.type === 'file') files += 1;
      return path.join(dataDir, entry.name.slice('data/'.length));
    }
    return false;
  }).catch((error: Error) => {
    throw new AdminCommandError(`${file}: ${error.message}`);
  });
  // readTar hands the manifest over once the whole archive is read; check it before the database loads.
  const manifest = JSON.parse(kept.get(MANIFEST)?.toString('utf8') ?? 'null') as BackupManifest | null;
  if (manifest?.format !== BACKUP_FORMAT || manifest.version !== 1) throw new AdminCommandError(`${file} is not a Tollgate backup of a version this release restores`);
  const database = kept.get('pg.tar');
  if (!database) throw new AdminCommandError(`${file} has no database (pg.tar)`);
  await loadDatabase(path.join(dataDir, 'pg'), new Blob([new Uint8Array(database)]));
  await writeFile(path.join(dataDir, 'restored-from.json'), JSON.stringify({ file: path.resolve(file), at: new Date().toISOString(), backup: manifest }, null, 2), { mode: 0o600 });
  return { dataDir, manifest, files };
}
