import { PGlite, type QueryOptions, type Transaction } from '@electric-sql/pglite';
import pg from 'pg';

// Query latency at the driver, under drizzle: every statement of every store passes here, raw SQL and
// query builder alike. Both drivers are extended through their public classes (pg.Pool's documented
// `Client` option, a PGlite subclass), never patched. The label is the statement's kind, read from
// its first word: six values, whatever the SQL.

export type QueryOperation = 'select' | 'insert' | 'update' | 'delete' | 'transaction' | 'other';
export type QueryObserver = (operation: QueryOperation, seconds: number) => void;

const TRANSACTION_WORDS = new Set(['begin', 'commit', 'rollback', 'savepoint', 'release', 'start', 'end']);

/** The kind of a statement, from its first word (`with …` and anything else is `other`). */
export function operationOf(text: unknown): QueryOperation {
  if (typeof text !== 'string') return 'other';
  let start = 0;
  while (start < text.length && (text.charCodeAt(start) <= 32 || text[start] === '(')) start += 1;
  let end = start;
  while (end < text.length && end - start < 9 && /[a-z]/i.test(text[end]!)) end += 1;
  const word = text.slice(start, end).toLowerCase();
  if (word === 'select' || word === 'insert' || word === 'update' || word === 'delete') return word;
  return TRANSACTION_WORDS.has(word) ? 'transaction' : 'other';
}

/** What one database's queries report to: an observer (metrics, set later) and, for PGlite, the calls in flight. */
export class QueryTiming {
  observer: QueryObserver | null = null;
  /** PGlite: queries and transactions holding or waiting for its one connection. */
  inFlight = 0;

  /** Starts timing one statement; the returned function ends it. */
  begin(text: unknown): () => void {
    const observer = this.observer;
    if (!observer) return noop;
    const started = performance.now();
    return () => observer(operationOf(text), (performance.now() - started) / 1000);
  }
}

const noop = () => {};

type Callback = (error: Error | null, result?: unknown) => void;

/**
 * A pg.Client that times each query it runs: what pool.query, drizzle and transactions' checked-out
 * clients all call. Submittables (cursors, streams) pass through untimed.
 */
export function timedClientClass(timing: QueryTiming): typeof pg.Client {
  return class TimedClient extends pg.Client {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    override query(config: any, values?: any, callback?: any): any {
      if (config == null || typeof config.submit === 'function' || timing.observer === null) return super.query(config, values, callback);
      const end = timing.begin(typeof config === 'string' ? config : config.text);
      if (typeof values === 'function' || typeof callback === 'function') {
        const done: Callback = typeof values === 'function' ? values : callback;
        const timed: Callback = (error, result) => {
          end();
          done(error, result);
        };
        return typeof values === 'function' ? super.query(config, timed) : super.query(config, values, timed);
      }
      return (super.query(config, values) as Promise<unknown>).then(
        (result) => {
          end();
          return result;
        },
        (error: unknown) => {
          end();
          throw error;
        },
      );
    }
  };
}

/**
 * PGlite with each query timed (inside transactions too) and its calls in flight counted: it runs one at
 * a time, so while any runs its connection is busy and the others wait.
 */
export function timedPgliteClass(timing: QueryTiming): typeof PGlite {
  return class TimedPGlite extends PGlite {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    override async query<T>(query: string, params?: any[], options?: QueryOptions) {
      timing.inFlight += 1;
      const end = timing.begin(query);
      try {
        return await super.query<T>(query, params, options);
      } finally {
        end();
        timing.inFlight -= 1;
      }
    }

    override async transaction<T>(callback: (tx: Transaction) => Promise<T>): Promise<T> {
      timing.inFlight += 1;
      try {
        return await super.transaction((tx) => callback(timedTransaction(tx, timing)));
      } finally {
        timing.inFlight -= 1;
      }
    }
  };
}

/** The transaction handle with its query timed; everything else (closed, rollback) is the original's. */
function timedTransaction(tx: Transaction, timing: QueryTiming): Transaction {
  const timed = Object.create(tx) as Transaction;
  timed.query = async (query, params, options) => {
    const end = timing.begin(query);
    try {
      return await tx.query(query, params, options);
    } finally {
      end();
    }
  };
  return timed;
}
