import type { TranscriptEntry } from './chat-store.js';

/**
 * What a turn sends at most of a session: 96 KiB of transcript. No provider's tokenizer makes more tokens than
 * bytes, so this keeps every session inside the smallest default model's context (128k tokens) with room for
 * the answer, whatever the model.
 */
export const CONTEXT_BUDGET_BYTES = 96 * 1024;

const size = (entry: TranscriptEntry) => Buffer.byteLength(JSON.stringify(entry));

/**
 * The session as a turn sends it: system entries kept, the oldest others dropped until it fits, and never
 * starting inside a turn (a tool result without its call): what remains begins at a user message. The newest
 * user message always goes, even alone over the budget.
 */
export function trimToContext(entries: TranscriptEntry[], budgetBytes = CONTEXT_BUDGET_BYTES): TranscriptEntry[] {
  const system = entries.filter((entry) => entry.role === 'system');
  const rest = entries.filter((entry) => entry.role !== 'system');
  let total = [...system, ...rest].reduce((sum, entry) => sum + size(entry), 0);
  let start = 0;
  while (total > budgetBytes && start < rest.length - 1) {
    total -= size(rest[start]!);
    start += 1;
  }
  while (start < rest.length - 1 && rest[start]!.role !== 'user') start += 1;
  return [...system, ...rest.slice(start)];
}
