/**
 * Keeps a `lastUsedAt` column fresh without a write on every request: at most one write per
 * credential per interval from this process (the SQL side repeats the check across nodes).
 */
export function createUsageToucher(write: (id: string, now: Date) => Promise<void>, intervalMs = 60_000) {
  const lastWrite = new Map<string, number>();
  return (id: string, now = new Date()) => {
    const previous = lastWrite.get(id);
    if (previous !== undefined && now.getTime() - previous < intervalMs) return;
    lastWrite.set(id, now.getTime());
    if (lastWrite.size > 100_000) lastWrite.clear();
    // Fire and forget: a failed usage stamp must never fail the request it describes.
    write(id, now).catch(() => lastWrite.delete(id));
  };
}
