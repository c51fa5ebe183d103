// Rotating SECRET_PEPPER and WALLET_MASTER_KEY without downtime (docs/operations.md#key-rotation).
//
// Each module declares the columns that hold a secret hash or a sealed value (one call per column, in its
// factory); this file re-keys them in batches: rows under the previous pepper get the current pepper's hash
// (SecretHasher.rekey, no secret needed), rows sealed under the previous master key are opened and sealed again.
// A batch is a few hundred conditional UPDATEs (WHERE the value is still the old one), so a batch is resumable
// from anywhere and never overwrites a value changed meanwhile (a credential revoked, a key replaced); progress
// lives in the rows themselves (their pepper or key id), so a rerun continues where the last one stopped.
import { and, eq, sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Logger } from 'pino';
import type { Database } from './db.js';
import type { KeySealer } from './sealing.js';
import type { SecretHasher } from './secrets.js';

/** A column of secret hashes (SecretHasher.hash), looked up by equality. */
export interface HashedColumn {
  /** `table.column`, as progress and status print it. */
  name: string;
  table: PgTable;
  /** The row's primary key. */
  key: PgColumn[];
  column: PgColumn;
}

/** A column of values sealed under the master key (KeySealer), bound to their row by associated data. */
export interface SealedColumn extends HashedColumn {
  /** The associated data the value was sealed with, from the row's key (by column name). */
  associatedData(key: Record<string, string>): string;
}

export interface ColumnCounts {
  name: string;
  current: number;
  previous: number;
  /** Hashes written before the rotatable format: rewritten when their secret is next presented. */
  legacy?: number;
  /** Under neither the current nor the previous pepper or key: they will not be found or opened. */
  unknown: number;
}

export interface RotationStatus {
  pepper: { current: string; previous: string | null; columns: ColumnCounts[] };
  masterKey: { current: string; previous: string | null; columns: ColumnCounts[] };
}

export interface BatchResult {
  /** Rows re-keyed (or re-sealed) by this batch. */
  done: number;
  /** Rows still under the previous pepper or key. */
  remaining: number;
  /** Rows this command cannot move (legacy hashes, another pepper's or key's): listed by column. */
  stuck: ColumnCounts[];
}

export class RotationError extends Error {}

export class KeyRotation {
  readonly #hashed: HashedColumn[] = [];
  readonly #sealed: SealedColumn[] = [];

  constructor(
    private readonly database: Database,
    private readonly hasher: SecretHasher,
    private readonly sealer: () => KeySealer,
    private readonly log: Logger,
  ) {}

  hashedColumn(column: HashedColumn): void {
    this.#hashed.push(column);
  }

  sealedColumn(column: SealedColumn): void {
    this.#sealed.push(column);
  }

  /**
   * Looks a presented secret up by each stored form it may have (SecretHasher.candidates), the current first.
   * Found under another form (the previous pepper, a legacy HMAC), the row is rewritten to the current one now:
   * we hold the secret, which is the only way a legacy hash can move.
   * Rows only ever move to the current form, so one that moved between our lookups (missed under the current
   * form, then moved away from the older one) is found by asking for the current form once more.
   */
  async find<T>(secret: string, lookup: (hash: string) => Promise<T | null | undefined>): Promise<T | null> {
    // The current form first and alone: it is what nearly every request finds, so the others are made only on a miss.
    const current = this.hasher.hash(secret);
    const atCurrent = await lookup(current);
    if (atCurrent !== null && atCurrent !== undefined) return atCurrent;
    const older = this.hasher.candidates(secret).slice(1);
    for (const candidate of older) {
      const found = await lookup(candidate);
      if (found === null || found === undefined) continue;
      void this.rehashOnUse(candidate, current);
      return found;
    }
    return older.length > 0 ? ((await lookup(current)) ?? null) : null;
  }

  /** Rewrites a stored hash wherever a registered column holds it (conditionally: a concurrent change wins). */
  async rehashOnUse(stored: string, current: string): Promise<void> {
    try {
      for (const { table, column } of this.#hashed) {
        await this.database.query(sql`update ${table} set ${sql.identifier(column.name)} = ${current} where ${eq(column, stored)}`);
      }
    } catch (error) {
      this.log.warn({ err: error }, 'a secret hash found under another pepper was not rewritten; the next use retries');
    }
  }

  async status(): Promise<RotationStatus> {
    const sealer = this.#sealerOrNull();
    const pepperColumns: ColumnCounts[] = [];
    for (const column of this.#hashed) {
      const counts: ColumnCounts = { name: column.name, current: 0, previous: 0, legacy: 0, unknown: 0 };
      for (const { id, n } of await this.#countByKeyId(column, 'p1')) {
        const state = id === null ? 'legacy' : id === this.hasher.pepperId ? 'current' : id === this.hasher.previousPepperId ? 'previous' : 'unknown';
        counts[state]! += n;
      }
      pepperColumns.push(counts);
    }
    const sealedColumns: ColumnCounts[] = [];
    for (const column of this.#sealed) {
      const counts: ColumnCounts = { name: column.name, current: 0, previous: 0, unknown: 0 };
      for (const { id, n } of await this.#countByKeyId(column, 'v1')) {
        // A value in another format (a KMS key reference) is not ours to reseal.
        if (id === null) continue;
        const state = id === sealer?.keyId ? 'current' : id === sealer?.previousKeyId ? 'previous' : 'unknown';
        counts[state] += n;
      }
      sealedColumns.push(counts);
    }
    return {
      pepper: { current: this.hasher.pepperId, previous: this.hasher.previousPepperId, columns: pepperColumns },
      masterKey: { current: sealer?.keyId ?? 'none', previous: sealer?.previousKeyId ?? null, columns: sealedColumns },
    };
  }

  /**
   * A pepper that is not the database's: stored hashes carry their pepper's id, and when some do but none is this
   * node's current or previous pepper, every credential would be refused here and every one made here refused
   * elsewhere. `serve` and the CLI refuse to run with it (null: no such mismatch, or nothing to tell it by).
   */
  async pepperMismatch(): Promise<string | null> {
    const seen = new Map<string, number>();
    for (const column of this.#hashed) {
      for (const { id, n } of await this.#countByKeyId(column, 'p1')) if (id !== null) seen.set(id, (seen.get(id) ?? 0) + n);
    }
    if (seen.size === 0 || seen.has(this.hasher.pepperId) || (this.hasher.previousPepperId && seen.has(this.hasher.previousPepperId))) return null;
    const total = [...seen.values()].reduce((a, b) => a + b, 0);
    return (
      `SECRET_PEPPER: not the pepper of this database's credentials: none of its ${total} secret hashes is under this pepper (id ${this.hasher.pepperId})` +
      `${this.hasher.previousPepperId ? ` or SECRET_PEPPER_PREVIOUS (id ${this.hasher.previousPepperId})` : ''}; they are under pepper id ${[...seen.keys()].join(', ')}. ` +
      'Set the pepper every node of this deployment uses (docs/operations.md#key-rotation)'
    );
  }

  /** Re-keys up to `limit` hashes from the previous pepper to the current one. */
  async rotatePepperBatch(limit: number): Promise<BatchResult> {
    const previous = this.hasher.previousPepperId;
    if (!previous) throw new RotationError('SECRET_PEPPER_PREVIOUS is unset: there is no previous pepper to move hashes from');
    let done = 0;
    for (const column of this.#hashed) {
      while (done < limit) {
        const rows = await this.#rowsUnder(column, `p1.${previous}.%`, limit - done);
        if (rows.length === 0) break;
        let moved = 0;
        for (const row of rows) {
          const next = this.hasher.rekey(row.value);
          if (next && (await this.#replace(column, row, next))) moved += 1;
        }
        done += moved;
        if (moved === 0) break;
      }
    }
    const status = await this.status();
    return { done, remaining: sum(status.pepper.columns, 'previous'), stuck: status.pepper.columns.filter((c) => (c.legacy ?? 0) + c.unknown > 0) };
  }

  /** Seals up to `limit` values again under the current master key, from the previous one. */
  async resealBatch(limit: number): Promise<BatchResult> {
    const sealer = this.#sealerOrNull();
    const previous = sealer?.previousKeyId;
    if (!sealer || !previous) throw new RotationError('WALLET_MASTER_KEY_PREVIOUS is unset: there is no previous master key to re-seal from');
    let done = 0;
    for (const column of this.#sealed) {
      while (done < limit) {
        const rows = await this.#rowsUnder(column, `v1.${previous}.%`, limit - done);
        if (rows.length === 0) break;
        let moved = 0;
        for (const row of rows) {
          let next: string | null;
          try {
            next = sealer.reseal(row.value, column.associatedData(row.key));
          } catch (error) {
            // Sealed under the previous key but it does not open as this row's: leave it, say which.
            throw new RotationError(`${column.name} ${JSON.stringify(row.key)} does not open under the previous master key: ${(error as Error).message}`);
          }
          if (next && (await this.#replace(column, row, next))) moved += 1;
        }
        done += moved;
        if (moved === 0) break;
      }
    }
    const status = await this.status();
    return { done, remaining: sum(status.masterKey.columns, 'previous'), stuck: status.masterKey.columns.filter((c) => c.unknown > 0) };
  }

  #sealerOrNull(): KeySealer | null {
    try {
      return this.sealer();
    } catch {
      return null;
    }
  }

  /** Rows by the key id their value names (`<format>.<id>.…`); id null for a value in another format. */
  async #countByKeyId(column: HashedColumn, format: string): Promise<Array<{ id: string | null; n: number }>> {
    const id = sql`case when ${column.column} like ${`${format}.%`} then split_part(${column.column}, '.', 2) end`;
    const rows = await this.database.query<{ id: string | null; n: number }>(
      sql`select ${id} as id, count(*)::int as n from ${column.table} where ${column.column} is not null group by 1`,
    );
    return rows.map((row) => ({ id: row.id, n: Number(row.n) }));
  }

  async #rowsUnder(column: HashedColumn, pattern: string, limit: number): Promise<Array<{ key: Record<string, string>; value: string }>> {
    const keys = sql.join(
      column.key.map((k) => sql`${k}::text as ${sql.identifier(`key_${k.name}`)}`),
      sql`, `,
    );
    const rows = await this.database.query<Record<string, string>>(
      sql`select ${keys}, ${column.column} as value from ${column.table} where ${column.column} like ${pattern} order by ${sql.join(column.key, sql`, `)} limit ${limit}`,
    );
    return rows.map((row) => ({ key: Object.fromEntries(column.key.map((k) => [k.name, row[`key_${k.name}`]!])), value: row.value! }));
  }

  /** One conditional UPDATE: the row still holds the old value, or it changed meanwhile and is left alone. */
  async #replace(column: HashedColumn, row: { key: Record<string, string>; value: string }, next: string): Promise<boolean> {
    const where: SQL[] = [...column.key.map((k) => sql`${k}::text = ${row.key[k.name]}`), eq(column.column, row.value)];
    const changed = await this.database.query(
      sql`update ${column.table} set ${sql.identifier(column.column.name)} = ${next} where ${and(...where)} returning 1 as changed`,
    );
    return changed.length > 0;
  }
}

const sum = (columns: ColumnCounts[], state: 'previous') => columns.reduce((n, c) => n + c[state], 0);
