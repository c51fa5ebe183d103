/**
 * A per-process cache of credential lookups (secret hash → principal), for kinds whose every request
 * would otherwise read the database. Correctness rests on the owner of the credential table:
 * - every write that changes what a lookup answers calls `invalidate(tag)` here and on every other node
 *   (e.g. a NOTIFY sent in the writing transaction), so a change is seen at once;
 * - while that channel is down (`setListening(false)`) the cache is bypassed, and it starts empty when the
 *   channel is back, since changes in between were never heard;
 * - `ttlMs` bounds how long an entry lives even if an invalidation is lost without the channel noticing.
 *
 * Only found credentials are kept: unknown secrets cost one lookup each, as without the cache, and a
 * caller spraying random secrets never touches it, so hot entries are never evicted by misses. The size
 * is bounded (least recently used goes first) and entries carry tags (e.g. `key:<id>`, `project:<id>`)
 * so one invalidation drops every entry it concerns.
 */
export interface CredentialCacheOptions<V> {
  maxEntries: number;
  ttlMs: number;
  /** The tags an entry is dropped by. */
  tagsOf: (value: V) => readonly string[];
  now?: () => number;
}

export type CacheResult = 'hit' | 'miss' | 'bypass';

interface Entry<V> {
  value: V;
  tags: readonly string[];
  expiresAt: number;
}

export class CredentialCache<V> {
  /** Insertion order is recency order: a hit moves its entry to the end, eviction takes the first. */
  private readonly entries = new Map<string, Entry<V>>();
  private readonly byTag = new Map<string, Set<string>>();
  /** Loads under way, shared by concurrent requests with the same secret (bounded by requests in flight). */
  private readonly loading = new Map<string, Promise<V | null>>();
  /** Bumped by every invalidation: a load that started before one must not store what it read. */
  private generation = 0;
  private listening = false;
  private readonly now: () => number;

  constructor(private readonly options: CredentialCacheOptions<V>) {
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The cached value, or load's answer (kept when not null and no invalidation ran during the load). */
  async get(key: string, load: () => Promise<V | null>, observe?: (result: CacheResult) => void): Promise<V | null> {
    if (!this.listening) {
      observe?.('bypass');
      return load();
    }
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt > this.now()) {
      this.entries.delete(key);
      this.entries.set(key, entry);
      observe?.('hit');
      return entry.value;
    }
    if (entry) this.drop(key);
    observe?.('miss');
    const pending = this.loading.get(key);
    if (pending) return pending;
    const loaded = this.load(key, load).finally(() => {
      if (this.loading.get(key) === loaded) this.loading.delete(key);
    });
    this.loading.set(key, loaded);
    return loaded;
  }

  /**
   * Drops every entry carrying the tag. Loads under way may have read the state before the change: they
   * store nothing, and later requests do not join them (which keys they concern is unknown until read).
   */
  invalidate(tag: string): void {
    this.generation += 1;
    this.loading.clear();
    for (const key of this.byTag.get(tag) ?? []) this.drop(key);
  }

  clear(): void {
    this.generation += 1;
    this.entries.clear();
    this.byTag.clear();
    this.loading.clear();
  }

  /** Whether invalidations are being heard: the cache serves only while they are, and starts empty each time. */
  setListening(listening: boolean): void {
    this.clear();
    this.listening = listening;
  }

  private async load(key: string, load: () => Promise<V | null>): Promise<V | null> {
    const generation = this.generation;
    const value = await load();
    // A write committed while we read may have been announced before our read's answer arrived; the
    // answer could then be the old one, so it is used for this request only.
    if (value !== null && generation === this.generation && this.listening) this.store(key, value);
    return value;
  }

  private store(key: string, value: V): void {
    const tags = this.options.tagsOf(value);
    this.entries.set(key, { value, tags, expiresAt: this.now() + this.options.ttlMs });
    for (const tag of tags) {
      let keys = this.byTag.get(tag);
      if (!keys) this.byTag.set(tag, (keys = new Set()));
      keys.add(key);
    }
    while (this.entries.size > this.options.maxEntries) this.drop(this.entries.keys().next().value!);
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    for (const tag of entry.tags) {
      const keys = this.byTag.get(tag);
      keys?.delete(key);
      if (keys?.size === 0) this.byTag.delete(tag);
    }
  }
}
