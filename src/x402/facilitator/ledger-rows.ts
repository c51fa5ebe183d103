// The settlement ledger's row shapes, and the pieces its batched statements are built from: one text[] parameter per
// column, unnest()ed, so a statement's shape (and drizzle's work to build it) does not depend on a turn's rows.
import { and, type Column, eq, getTableColumns, sql, type SQL } from 'drizzle-orm';
import { jsonText } from '../../platform/db-types.js';
import { x402Settlements, x402SettlementsOpen, type SettlementRow } from '../tables.js';

export interface SettlementKey {
  network: string;
  asset: string;
  payer: string;
  nonce: string;
}

export type NewSettlement = Omit<
  SettlementRow,
  'status' | 'claimedAt' | 'txHash' | 'transferLogIndex' | 'errorReason' | 'errorMessage' | 'response' | 'createdAt' | 'updatedAt' | 'finishedAt' | 'successAnsweredAt' | 'kind' | 'token'
> &
  // EIP-3009 rows (the default kind) name no separate token.
  Partial<Pick<SettlementRow, 'kind' | 'token'>>;

/** The columns a claim gives, as text (cast to their column's type by the statement). */
const CLAIM_GIVEN: Partial<Record<keyof SettlementRow, (row: NewSettlement) => string | null>> = {
  network: (r) => r.network,
  asset: (r) => r.asset,
  payer: (r) => r.payer,
  nonce: (r) => r.nonce,
  payTo: (r) => r.payTo,
  amount: (r) => String(r.amount),
  validBefore: (r) => String(r.validBefore),
  kind: (r) => r.kind ?? 'eip3009',
  token: (r) => r.token ?? null,
  // The JSON guard's check, as guardedJsonb's own would run it; a missing request stays SQL null.
  request: (r) => (r.request == null ? null : jsonText(r.request)),
  signature: (r) => r.signature,
  payloadHash: (r) => r.payloadHash,
  claimToken: (r) => r.claimToken,
  fromBlock: (r) => String(r.fromBlock),
  paymentId: (r) => r.paymentId ?? null,
};

/**
 * The new claims' rows as one SELECT over unnest()ed columns, one text[] placeholder per given column (named as
 * the column's key; `claimValues` fills them) and `now`, in the table's column order (what INSERT … SELECT fills).
 * Why not `.values(rows)`: drizzle builds that statement per row and column, ~150 µs of CPU per claim; this
 * statement's shape does not depend on the rows at all, so it is built and prepared once (ledger-statements.ts).
 */
export function claimRows(): SQL {
  const fixed: Partial<Record<keyof SettlementRow, SQL>> = {
    status: sql`'claimed'`,
    claimedAt: sql`now()`,
    createdAt: sql`${sql.placeholder('now')}::timestamptz`,
    updatedAt: sql`${sql.placeholder('now')}::timestamptz`,
  };
  const columns = Object.entries(getTableColumns(x402Settlements)) as Array<[keyof SettlementRow, Column]>;
  const provided = columns.filter(([key]) => CLAIM_GIVEN[key]);
  const arrays = sql.join(
    provided.map(([key]) => sql`${sql.placeholder(key)}::text[]`),
    sql`, `,
  );
  const names = sql.join([...provided.map(([, column]) => sql.identifier(column.name)), sql`n`], sql`, `);
  const selected = sql.join(
    columns.map(([key, column]) => {
      const type = sql.raw(column.getSQLType());
      if (CLAIM_GIVEN[key]) return sql`v.${sql.identifier(column.name)}::${type}`;
      return fixed[key] ?? sql`null::${type}`;
    }),
    sql`, `,
  );
  return sql`select ${selected} from unnest(${arrays}) with ordinality as v(${names}) order by v.n`;
}

/** claimRows' placeholders for these rows: each given column's values in row order, and `now`. */
export function claimValues(rows: NewSettlement[], now: Date): Record<string, unknown> {
  const values: Record<string, unknown> = { now: now.toISOString() };
  for (const [key, value] of Object.entries(CLAIM_GIVEN)) values[key] = rows.map(value!);
  return values;
}

/**
 * The arguments of unnest() for a turn's rows: the key's four columns, then each row's `more` values, one text[]
 * parameter per column (cast where the statement uses them). Why not a VALUES list: drizzle builds that per row
 * and value (~60 µs of CPU per settle per statement here); this statement's shape does not grow with the rows.
 */
export function keyColumns(rows: Array<[SettlementKey, Array<string | null>]>): SQL {
  return sql.join(
    keyColumnValues(rows).map((column) => sql`${sql.param(column)}::text[]`),
    sql`, `,
  );
}

/** keyColumns as placeholders `c0` … of a prepared statement of `width` columns (keyColumnSlotValues fills them). */
export function keyColumnSlots(width: number): SQL {
  return sql.join(
    Array.from({ length: width }, (_, c) => sql`${sql.placeholder(`c${c}`)}::text[]`),
    sql`, `,
  );
}

/** The values of keyColumnSlots' placeholders for these rows. */
export function keyColumnSlotValues(rows: Array<[SettlementKey, Array<string | null>]>): Record<string, Array<string | null>> {
  return Object.fromEntries(keyColumnValues(rows).map((column, c) => [`c${c}`, column]));
}

function keyColumnValues(rows: Array<[SettlementKey, Array<string | null>]>): Array<Array<string | null>> {
  const width = 4 + (rows[0]?.[1].length ?? 0);
  return Array.from({ length: width }, (_, c) => rows.map(([key, more]) => (c < 4 ? [key.network, key.asset, key.payer, key.nonce][c]! : more[c - 4]!)));
}

/** The row is the one named by the unnest()ed columns `v` it is joined with. */
export const matchesValues: SQL = and(
  eq(x402Settlements.network, sql`v.network`),
  eq(x402Settlements.asset, sql`v.asset`),
  eq(x402Settlements.payer, sql`v.payer`),
  eq(x402Settlements.nonce, sql`v.nonce`),
)!;

/** The states a row can still leave: everything the ledger writes is conditional on them. */
export const OPEN = ['claimed', 'broadcast'];

/** An open-list row is the one named by `rows` (a statement's RETURNING, or the settlements table). */
export const sameKey = (rows: Record<keyof SettlementKey, Column>): SQL =>
  and(
    eq(x402SettlementsOpen.network, rows.network),
    eq(x402SettlementsOpen.asset, rows.asset),
    eq(x402SettlementsOpen.payer, rows.payer),
    eq(x402SettlementsOpen.nonce, rows.nonce),
  )!;
