import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import type { SQL } from 'drizzle-orm';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { pgTypes } from './pg-timestamp.js';
import { QueryTiming, timedClientClass, timedPgliteClass, type QueryObserver } from './db-timing.js';

/** The drizzle handle every store uses; the same query builder over PGlite or node-postgres. */
export type Db = PgDatabase<PgQueryResultHKT, Record<string, never>>;
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
/** Either the database or an open transaction: stores accept both so services can compose them. */
export type Executor = Db | Tx;

export type Notification = (payload: string) => void;

/** Connections now (metrics). PGlite has one: busy while any call runs, the others wait for it. */
export interface PoolStats {
  max: number;
  total: number;
  idle: number;
  /** Queries waiting for a connection. */
  waiting: number;
}

export interface ListenOptions {
  /**
   * Told when notifications stop being received (false: the listening connection dropped, so any sent
   * meanwhile are lost) and when they are again (true: reconnected and listening). Not called for the
   * first subscription: listen() resolving means listening. PGlite is in-process and never drops it.
   */
  onListening?: (listening: boolean) => void;
}

export interface Database {
  readonly kind: 'pglite' | 'postgres';
  readonly db: Db;
  /** Runs raw SQL and returns its rows. */
  query<T = Record<string, unknown>>(statement: SQL): Promise<T[]>;
  /**
   * Runs fn while holding a cluster-wide advisory lock (keyed by hashtextextended(name); session level, on its own connection for
   * PostgreSQL). PGlite has one process per data dir, so an in-process mutex is the same guarantee.
   */
  withAdvisoryLock<T>(key: string, fn: () => Promise<T>): Promise<T>;
  /** Takes the lock if free and keeps it until release() or the connection drops; null if held elsewhere. */
  tryHoldAdvisoryLock(key: string): Promise<{ release(): Promise<void>; lost: Promise<void> } | null>;
  listen(channel: string, onNotify: Notification, options?: ListenOptions): Promise<() => Promise<void>>;
  notify(channel: string, payload: string): Promise<void>;
  /** Told each statement's kind and duration (metrics); one observer, the last one set. */
  observeQueries(observer: QueryObserver | null): void;
  pool(): PoolStats;
  /**
   * PGlite only (undefined on PostgreSQL: pg_dump is its tool): the data directory as a tarball, taken while no
   * query and no transaction runs, and `alongside` run at that same moment (the devchain's state, for a backup
   * whose two halves agree). PGlite's own clone() works from the same dump.
   */
  snapshot?<T>(alongside: () => Promise<T>): Promise<{ tarball: Blob; alongside: T }>;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** postgres:// URL; null opens PGlite. */
  url: string | null;
  /** PGlite data directory; null keeps PGlite in memory. */
  pgliteDir: string | null;
  poolSize?: number;
  /**
   * PGlite only: a compiled WebAssembly module and file bundle to reuse, and a data dir to start from (a dump).
   * The tests open hundreds of databases in one process: compiling PGlite and migrating each time was most of it.
   */
  pglite?: Pick<PGliteOptions, 'wasmModule' | 'fsBundle' | 'loadDataDir'>;
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  return options.url ? openPostgres(options.url, options.poolSize ?? 10) : openPglite(options.pgliteDir, options.pglite);
}

async function openPglite(dir: string | null, start: OpenDatabaseOptions['pglite'] = {}): Promise<Database> {
  const { client, timing } = await startPglite(dir, start);
  return pgliteDatabase(client, timing);
}

/** A started PGlite and the timing its queries report to (the tests keep these across test files). */
export interface PgliteHandle {
  client: PGlite;
  timing: QueryTiming;
}

export async function startPglite(dir: string | null, start: OpenDatabaseOptions['pglite'] = {}): Promise<PgliteHandle> {
  if (dir) fs.mkdirSync(path.dirname(dir), { recursive: true });
  const timing = new QueryTiming();
  const TimedPGlite = timedPgliteClass(timing);
  const client: PGlite = dir ? new TimedPGlite(dir, start) : new TimedPGlite(start);
  await client.waitReady;
  return { client, timing };
}

/** The Database over a started PGlite; `close` is what its close() does (the tests' leases fence instead). */
export function pgliteDatabase(client: PGlite, timing: QueryTiming, close = () => client.close()): Database {
  const db = drizzlePglite({ client }) as unknown as Db;
  const held = new Map<string, Promise<void>>();

  const withAdvisoryLock = async <T>(key: string, fn: () => Promise<T>): Promise<T> => {
    // Chain behind whoever holds the key in this process.
    const previous = held.get(key) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    const tail = previous.then(() => mine);
    held.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      done();
      if (held.get(key) === tail) held.delete(key);
    }
  };

  const leaders = new Set<string>();
  return {
    kind: 'pglite',
    db,
    async query<T>(statement: SQL) {
      const result = await db.execute(statement);
      return (result as unknown as { rows: T[] }).rows;
    },
    withAdvisoryLock,
    async tryHoldAdvisoryLock(key) {
      if (leaders.has(key)) return null;
      leaders.add(key);
      return { release: async () => void leaders.delete(key), lost: new Promise<void>(() => {}) };
    },
    async listen(channel, onNotify) {
      const unsubscribe = await client.listen(channel, onNotify);
      return async () => unsubscribe();
    },
    async notify(channel, payload) {
      await client.query('select pg_notify($1, $2)', [channel, payload]);
    },
    observeQueries(observer) {
      timing.observer = observer;
    },
    pool() {
      const busy = timing.inFlight > 0 ? 1 : 0;
      return { max: 1, total: 1, idle: 1 - busy, waiting: Math.max(0, timing.inFlight - 1) };
    },
    async snapshot(alongside) {
      // Fewer WAL records to replay on the restored copy; the copy is consistent either way.
      await client.exec('CHECKPOINT');
      return client._runExclusiveTransaction(() =>
        client._runExclusiveQuery(async () => {
          const other = await alongside();
          return { tarball: await client.dumpDataDir('none'), alongside: other };
        }),
      );
    },
    close,
  };
}

async function openPostgres(url: string, poolSize: number): Promise<Database> {
  const timing = new QueryTiming();
  const pool = new pg.Pool({ connectionString: url, max: poolSize, Client: timedClientClass(timing), types: pgTypes });
  // A client that errors (server restart, database dropped) must not crash the process: idle ones
  // the pool replaces; a checked-out one between queries (a transaction, an advisory lock) would
  // otherwise emit an unhandled 'error'. Its caller's next query fails, and the watchdog sees it.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = drizzlePg({ client: pool }) as unknown as Db;
  const listeners = new Map<string, Set<Notification>>();
  const watchers = new Set<(listening: boolean) => void>();
  let listenClient: pg.Client | null = null;
  let connecting: Promise<pg.Client> | null = null;
  let reconnectTimer: NodeJS.Timeout | null = null;
  let closed = false;
  const tell = (listening: boolean) => watchers.forEach((fn) => fn(listening));
  let heartbeat: { token: string; heard: () => void } | null = null;
  let heartbeatTimer: NodeJS.Timeout | null = null;

  // One connection carries every LISTEN of the process. When it drops it is reopened (with backoff) and
  // listens to every channel again; subscribers hear of both, since notifications in between are lost.
  const connectListener = async (): Promise<pg.Client> => {
    const client = new pg.Client({ connectionString: url, keepAlive: true });
    let ended = false;
    client.on('error', () => {});
    client.on('notification', (message) => {
      if (message.channel === LISTEN_HEARTBEAT_CHANNEL) {
        const pending = heartbeat as { token: string; heard: () => void } | null;
        if (pending && pending.token === message.payload) pending.heard();
        return;
      }
      for (const fn of listeners.get(message.channel) ?? []) fn(message.payload ?? '');
    });
    client.once('end', () => {
      ended = true;
      if (listenClient !== client) return;
      listenClient = null;
      if (closed) return;
      tell(false);
      scheduleReconnect(LISTEN_RECONNECT_MIN_MS);
    });
    try {
      await client.connect();
      for (const channel of [LISTEN_HEARTBEAT_CHANNEL, ...listeners.keys()]) await client.query(`listen ${quoteIdent(channel)}`);
      if (ended) throw new Error('the listening connection ended while it was being opened');
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    listenClient = client;
    heartbeatTimer ??= setInterval(() => void beat(), LISTEN_HEARTBEAT_MS).unref();
    return client;
  };
  // A connection a NAT or load balancer dropped silently never ends: notifications just stop (TCP keepalive
  // notices after hours). So the listener notifies itself every couple of seconds; one not heard back in
  // time counts as a drop, and the connection is replaced.
  const beat = async () => {
    const client = listenClient;
    if (!client || heartbeat) return;
    const token = randomUUID();
    const heard = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), LISTEN_HEARTBEAT_TIMEOUT_MS);
      heartbeat = { token, heard: () => (clearTimeout(timer), resolve(true)) };
      client.query('select pg_notify($1, $2)', [LISTEN_HEARTBEAT_CHANNEL, token]).catch(() => {});
    });
    heartbeat = null;
    if (heard || listenClient !== client || closed) return;
    listenClient = null;
    tell(false);
    (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    scheduleReconnect(LISTEN_RECONNECT_MIN_MS);
  };
  const ensureListenClient = (): Promise<pg.Client> =>
    listenClient ? Promise.resolve(listenClient) : (connecting ??= connectListener().finally(() => (connecting = null)));
  const scheduleReconnect = (delayMs: number) => {
    reconnectTimer = setTimeout(() => {
      reconnectTimer = null;
      if (closed) return;
      ensureListenClient().then(
        () => tell(true),
        () => scheduleReconnect(Math.min(delayMs * 2, LISTEN_RECONNECT_MAX_MS)),
      );
    }, delayMs);
    reconnectTimer.unref();
  };

  return {
    kind: 'postgres',
    db,
    async query<T>(statement: SQL) {
      const result = await db.execute(statement);
      return (result as unknown as { rows: T[] }).rows;
    },
    async withAdvisoryLock(key, fn) {
      // A connection of its own, not one of the pool's: fn's statements use the pool, and with one connection
      // (DATABASE_POOL_SIZE=1) they would wait for the one the lock holds, forever (the migrations did).
      const client = new pg.Client({ connectionString: url });
      // A lost connection fails the statement under way; unheard, its 'error' event would end the process.
      client.on('error', () => {});
      await client.connect();
      try {
        await client.query('select pg_advisory_lock(hashtextextended($1, 0))', [key]);
        try {
          return await fn();
        } finally {
          await client.query('select pg_advisory_unlock(hashtextextended($1, 0))', [key]);
        }
      } finally {
        await client.end();
      }
    },
    async tryHoldAdvisoryLock(key) {
      // A dedicated connection: the lock lives exactly as long as this session does.
      const client = new pg.Client({ connectionString: url });
      let markLost!: () => void;
      const lost = new Promise<void>((resolve) => (markLost = resolve));
      client.on('error', () => markLost());
      client.on('end', () => markLost());
      await client.connect();
      let held = false;
      try {
        const { rows } = await client.query<{ ok: boolean }>(
          'select pg_try_advisory_lock(hashtextextended($1, 0)) as ok',
          [key],
        );
        held = rows[0]?.ok === true;
      } finally {
        if (!held) await client.end().catch(() => {});
      }
      if (!held) return null;
      return {
        lost,
        release: async () => {
          await client.end().catch(() => {});
        },
      };
    },
    async listen(channel, onNotify, options = {}) {
      const client = await ensureListenClient();
      let set = listeners.get(channel);
      if (!set) {
        set = new Set();
        listeners.set(channel, set);
        await client.query(`listen ${quoteIdent(channel)}`);
      }
      set.add(onNotify);
      const { onListening } = options;
      if (onListening) watchers.add(onListening);
      return async () => {
        set.delete(onNotify);
        if (onListening) watchers.delete(onListening);
      };
    },
    async notify(channel, payload) {
      await pool.query('select pg_notify($1, $2)', [channel, payload]);
    },
    observeQueries(observer) {
      timing.observer = observer;
    },
    pool: () => ({ max: poolSize, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async close() {
      closed = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      if (heartbeatTimer) clearInterval(heartbeatTimer);
      await (connecting ?? Promise.resolve(null)).catch(() => null);
      await listenClient?.end().catch(() => {});
      const ended = pool.end();
      failQueuedRequests(pool);
      await ended;
    },
  };
}

/**
 * pg-pool's end() leaves the requests queued for a connection unanswered for good, and with them whoever awaits
 * them (a worker loop that a shutdown then waits on). They are failed as requests made after the end are.
 * `_pendingQueue` is pg-pool's own (3.x); src/platform/db-close.test.ts fails if that changes.
 */
function failQueuedRequests(pool: pg.Pool): void {
  const queue = (pool as unknown as { _pendingQueue?: Array<{ callback(error: Error): void }> })._pendingQueue;
  for (const request of queue?.splice(0) ?? []) request.callback(new Error('Cannot use a pool after calling end on the pool'));
}

/** First wait before reopening a dropped listening connection; it doubles per failed try up to the max. */
const LISTEN_RECONNECT_MIN_MS = 100;
const LISTEN_RECONNECT_MAX_MS = 5_000;
/** How often the listening connection proves it still delivers, and how long its own notification may take. */
const LISTEN_HEARTBEAT_MS = 2_000;
const LISTEN_HEARTBEAT_TIMEOUT_MS = 3_000;
const LISTEN_HEARTBEAT_CHANNEL = 'tollgate_listen_heartbeat';

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
