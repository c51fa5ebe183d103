// Migrated PGlite databases kept across the test files of a worker. Opening one from the migrated dump costs
// 0.8 s (the dump's thousand files written into PGlite's in-memory file system, then the backend's start);
// emptying one a file has used costs a few tens of ms, and the PGlite pass opens about two hundred.
//
// A file gets a lease: a Database over the instance that refuses every call once closed, as a closed PGlite
// does, so a straggler of one file (a loop its server left running) cannot write into the next file's data.
// On release the instance is emptied (every table, every sequence, listeners, temporary tables, prepared statements,
// advisory locks) and pooled only if its schema and session settings are still the migrated ones; a file that changed
// them leaves its instance behind.
import type { PGlite } from '@electric-sql/pglite';
import { pgliteDatabase, type Database, type PgliteHandle } from '../../src/platform/db.js';

interface Pooled extends PgliteHandle {
  /** The schema's fingerprint when it was opened, migrated. */
  schema: string;
  /** One statement naming the tables that hold rows. */
  nonEmpty: string;
}

export interface PgliteLease {
  database: Database;
  /** Whether the instance served a file before (tests of the pool). */
  reused: boolean;
  release(): Promise<void>;
}

const idle: Pooled[] = [];
const MAX_IDLE = 2;
const RELEASE_TIMEOUT_MS = 5_000;

/** A migrated database: an emptied one from an earlier lease, or `open()`'s. */
export async function leasePglite(open: () => Promise<PgliteHandle>): Promise<PgliteLease> {
  const reused = idle.pop();
  const pooled = reused ?? (await prepare(await open()));
  let fenced = false;
  const listeners: [channel: string, callback: unknown][] = [];
  const lease = new Proxy(pooled.client, {
    get(target, property) {
      if (property === 'closed') return fenced || target.closed;
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (fenced) return Promise.reject(new Error('PGlite is closed'));
        if (property === 'listen') listeners.push([args[0] as string, args[1]]);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const database = pgliteDatabase(lease, pooled.timing, async () => void (fenced = true));
  return {
    database,
    reused: reused !== undefined,
    async release() {
      fenced = true;
      const emptied = await Promise.race([
        empty(pooled, listeners).catch(() => false),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), RELEASE_TIMEOUT_MS).unref()),
      ]);
      if (emptied && idle.length < MAX_IDLE) {
        pooled.timing.observer = null;
        idle.push(pooled);
      } else {
        void pooled.client.close().catch(() => {});
      }
    },
  };
}

async function prepare(handle: PgliteHandle): Promise<Pooled> {
  const tables = await rows<{ name: string }>(handle.client, `select format('%I.%I', schemaname, tablename) as name from pg_tables where schemaname = 'public'`);
  const nonEmpty = tables.map(({ name }) => `select ${quote(name)} as name where exists (select from ${name})`).join(' union all ');
  return { ...handle, schema: await fingerprint(handle.client), nonEmpty };
}

/** True when the instance is as migrated again, with no rows; false when its schema was changed. */
async function empty(pooled: Pooled, listeners: [string, unknown][]): Promise<boolean> {
  const { client } = pooled;
  if (client.closed) return false;
  // By callback: PGlite's unlisten(channel) alone keeps the callbacks, and would not LISTEN again for the next file.
  for (const [channel, callback] of listeners) await client.unlisten(channel, callback as (payload: string) => void);
  await client.exec(`select pg_advisory_unlock_all(); discard temp; deallocate all`);
  if ((await fingerprint(client)) !== pooled.schema) return false;
  const full = await rows<{ name: string }>(client, pooled.nonEmpty);
  // As replica: no user trigger fires, so append-only tables (audit_log refuses TRUNCATE) are emptied too.
  if (full.length > 0) await client.exec(`begin; set local session_replication_role = replica; truncate ${full.map(({ name }) => name).join(', ')} cascade; commit`);
  await client.query(
    `select setval(s.seqrelid, s.seqstart, false) from pg_sequence s join pg_class c on c.oid = s.seqrelid join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public'`,
  );
  return true;
}

/**
 * Everything a test could change besides rows: namespaces, relations, columns, constraints, indexes, functions, triggers,
 * enums, roles, session settings (PGlite sets search_path for its session, so RESET ALL is no way back), migrations applied.
 */
async function fingerprint(client: PGlite): Promise<string> {
  const [{ md5 }] = await rows<{ md5: string }>(
    client,
    `with app as (select oid from pg_namespace where nspname not in ('pg_catalog', 'information_schema', 'pg_toast') and nspname not like 'pg_temp%' and nspname not like 'pg_toast_temp%')
     select md5(string_agg(line, E'\\n' order by line)) from (
       select 'namespace ' || nspname as line from pg_namespace
       union all select 'relation ' || c.oid::regclass || ' ' || c.relkind::text || ' ' || coalesce(array_to_string(c.reloptions, ','), '') from pg_class c where c.relnamespace in (select oid from app)
       union all select 'column ' || a.attrelid::regclass || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
         from pg_attribute a join pg_class c on c.oid = a.attrelid left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
         where c.relnamespace in (select oid from app) and a.attnum > 0 and not a.attisdropped
       union all select 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid) from pg_constraint where connamespace in (select oid from app)
       union all select 'index ' || pg_get_indexdef(indexrelid) from pg_index where indrelid in (select oid from pg_class where relnamespace in (select oid from app))
       union all select 'function ' || p.oid::regprocedure || ' ' || md5(p.prosrc) from pg_proc p where p.pronamespace in (select oid from app)
       union all select 'trigger ' || tgrelid::regclass || ' ' || tgname || ' ' || tgenabled::text from pg_trigger where not tgisinternal
       union all select 'enum ' || enumtypid::regtype || ' ' || enumlabel from pg_enum
       union all select 'role ' || rolname from pg_roles
       union all select 'setting ' || name || '=' || setting from pg_settings where source = 'session'
       union all select 'migrations ' || count(*) from drizzle.__drizzle_migrations
     ) lines`,
  );
  return md5;
}

async function rows<T>(client: PGlite, statement: string): Promise<T[]> {
  return (await client.query<T>(statement)).rows;
}

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
