/** A resource being opened, and how to close it again if its partner fails to open. */
export interface Opening<T> {
  opened: Promise<T>;
  close(value: T): Promise<unknown>;
}

/**
 * Two resources that need nothing of each other (the database and the chain), opened side by side: a start
 * waits for the slower, not for both in a row. If either fails, the other is closed once it has opened, and
 * the first's failure is thrown (the left one's when both fail).
 */
export async function openSideBySide<A, B>(left: Opening<A>, right: Opening<B>): Promise<[A, B]> {
  const [a, b] = await Promise.allSettled([left.opened, right.opened]);
  if (a.status === 'fulfilled' && b.status === 'fulfilled') return [a.value, b.value];
  if (a.status === 'fulfilled') await left.close(a.value).catch(() => undefined);
  if (b.status === 'fulfilled') await right.close(b.value).catch(() => undefined);
  throw a.status === 'rejected' ? a.reason : (b as PromiseRejectedResult).reason;
}
