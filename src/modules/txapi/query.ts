import { getAddress, type Address } from 'viem';
import type { z } from 'zod';
import { badRequest } from '../../platform/http/errors.js';
import { caip2 } from '../../chain/registry.js';
import { attestationQuerySchema, listQuerySchema } from './schemas.js';

export type ChainFilter = number | 'all';

export type ListQuery =
  /** Newest first; `before` (a paymentId) starts after that record instead of at the newest. */
  | { mode: 'page'; chain: ChainFilter; recipient: Address | null; page: number; pageSize: number; before: string | null }
  | { mode: 'cursor'; chain: number; recipient: Address; afterSequence: number; pageSize: number }
  | { mode: 'transaction'; chain: ChainFilter; recipient: Address | null; transactionHash: string; page: number; pageSize: number };

interface Issue {
  in: 'querystring';
  path: string;
  message: string;
}

/** How deep newest-first paging reaches. */
export const MAX_PAGE_OFFSET = 10_000;

/**
 * Validates the list query (field rules from the schema, then the rules between fields) and
 * resolves `chain`. Throws 400 invalid_request naming every bad parameter.
 */
export function parseListQuery(raw: unknown, chains: { primary: number; indexed: readonly number[] }): ListQuery {
  const parsed = listQuerySchema.safeParse(raw ?? {});
  if (!parsed.success) throw invalid(parsed.error.issues.map(toIssue));
  const q = parsed.data;
  const issues: Issue[] = [];
  const chain = resolveChain(q.chain, chains, issues);
  if (q.afterSequence !== undefined) {
    if (q.recipient === undefined) issues.push(issue('afterSequence', 'afterSequence requires recipient'));
    // Sequences are per (chain, recipient): the cursor names its chain so a change of default cannot move it.
    if (q.chain === undefined || chain === 'all') issues.push(issue('afterSequence', "afterSequence requires a specific chain (e.g. chain=eip155:4663), not 'all' or the default"));
    if (q.page !== 1) issues.push(issue('page', 'page cannot be combined with afterSequence (the cursor is the position)'));
  }
  if (q.before !== undefined) {
    if (q.afterSequence !== undefined) issues.push(issue('before', 'before cannot be combined with afterSequence: use one cursor'));
    if (q.transactionHash !== undefined) issues.push(issue('before', 'before cannot be combined with transactionHash'));
    if (q.page !== 1) issues.push(issue('page', 'page cannot be combined with before (the cursor is the position)'));
  }
  if (q.transactionHash !== undefined && q.afterSequence !== undefined) {
    issues.push(issue('transactionHash', 'transactionHash cannot be combined with afterSequence'));
  }
  // Deep offsets make one public request scan the index; the cursor reads any depth cheaply.
  if ((q.page - 1) * q.pageSize >= MAX_PAGE_OFFSET) {
    issues.push(issue('page', `page × pageSize must stay within the newest ${MAX_PAGE_OFFSET} records; use afterSequence to read further`));
  }
  if (issues.length) throw invalid(issues);
  const recipient = q.recipient === undefined ? null : getAddress(q.recipient.toLowerCase());
  if (q.afterSequence !== undefined) {
    return { mode: 'cursor', chain: chain as number, recipient: recipient!, afterSequence: q.afterSequence, pageSize: q.pageSize };
  }
  if (q.transactionHash !== undefined) {
    return { mode: 'transaction', chain, recipient, transactionHash: q.transactionHash.toLowerCase(), page: q.page, pageSize: q.pageSize };
  }
  return { mode: 'page', chain, recipient, page: q.page, pageSize: q.pageSize, before: q.before?.toLowerCase() ?? null };
}

/** The attestation query's `chain` (validated like the list's: a repeated parameter is an array, refused). */
export function parseAttestationChain(raw: unknown): string | undefined {
  const parsed = attestationQuerySchema.safeParse(raw ?? {});
  if (!parsed.success) throw invalid(parsed.error.issues.map(toIssue));
  return parsed.data.chain;
}

/** `chain` of any endpoint here: CAIP-2 or bare id of an indexed chain, or 'all' where allowed. */
export function resolveChain(
  value: string | undefined,
  chains: { primary: number; indexed: readonly number[] },
  issues: Issue[],
): ChainFilter {
  if (value === undefined) return chains.primary;
  if (value === 'all') return 'all';
  const id = Number(value.startsWith('eip155:') ? value.slice('eip155:'.length) : value);
  if (!chains.indexed.includes(id)) {
    issues.push(issue('chain', `chain ${value} is not indexed; indexed: ${chains.indexed.map(caip2).join(', ')} or 'all'`));
  }
  return id;
}

export const invalid = (issues: Issue[]) =>
  badRequest(`Invalid query: ${issues.map((i) => i.message).join('; ')}`, issues);

export const issue = (name: string, message: string): Issue => ({ in: 'querystring', path: `/${name}`, message });

function toIssue(zodIssue: z.core.$ZodIssue): Issue {
  const name = zodIssue.path.join('/');
  return { in: 'querystring', path: `/${name}`, message: zodIssue.message };
}
