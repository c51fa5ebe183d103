import type { PrincipalOf } from '../../platform/auth/principal.js';
import { CredentialCache, type CacheResult } from '../../platform/auth/credential-cache.js';
import type { Database } from '../../platform/db.js';
import type { Metrics } from '../../platform/metrics.js';

/** The channel every node LISTENs on; a payload is the tag of the keys a committed write changed. */
export const PROJECT_KEYS_CHANNEL = 'tollgate_project_keys';

/**
 * Bounds: 10,000 hot keys is far more than a node serves at once (an entry with its tags is under 1 KB). The TTL only
 * matters if a NOTIFY is lost while the listening connection looks alive; each hot key costs a node
 * one lookup per TTL, so a short one is cheap.
 */
export const KEY_CACHE_MAX_ENTRIES = 10_000;
export const KEY_CACHE_TTL_MS = 10_000;

type ProjectKeyPrincipal = PrincipalOf<'project_key'>;

/** What a write changed: one key, or every key of a project (its status is part of each key's principal). */
export type KeyScope = { keyId: string } | { projectId: string };
export const scopeTag = (scope: KeyScope): string => ('keyId' in scope ? `key:${scope.keyId}` : `project:${scope.projectId}`);

/**
 * This node's cache of project-key lookups (secret hash → principal, `disabled` included). Writers of
 * keys and projects NOTIFY the scope they changed in their transaction (ProjectsService.changingKeys);
 * every node drops the entries of that scope when the commit's notification arrives.
 */
export class ProjectKeyCache {
  private readonly cache = new CredentialCache<ProjectKeyPrincipal>({
    maxEntries: KEY_CACHE_MAX_ENTRIES,
    ttlMs: KEY_CACHE_TTL_MS,
    tagsOf: (principal) => [scopeTag({ keyId: principal.keyId }), scopeTag({ projectId: principal.projectId })],
  });
  private readonly observe: (result: CacheResult) => void;

  constructor(metrics: Metrics) {
    const lookups = metrics.counter('tollgate_project_key_lookups_total', 'Project-key lookups: hit (this node\'s cache), miss (read the database), bypass (cache off: invalidations not heard)', ['result']);
    this.observe = (result) => lookups.inc({ result });
    metrics.gauge('tollgate_project_key_cache_entries', 'Project keys in this node\'s lookup cache', [], (set) => set({}, this.cache.size));
  }

  get(secretHash: string, load: () => Promise<ProjectKeyPrincipal | null>): Promise<ProjectKeyPrincipal | null> {
    return this.cache.get(secretHash, load, this.observe);
  }

  invalidate(scope: KeyScope): void {
    this.cache.invalidate(scopeTag(scope));
  }

  /**
   * LISTENs for other nodes' (and this node's) changes; the cache serves only from then on, is bypassed
   * while the listening connection is down, and starts empty when it is back. Returns the unsubscribe.
   */
  async start(database: Pick<Database, 'listen'>): Promise<() => Promise<void>> {
    const unlisten = await database.listen(PROJECT_KEYS_CHANNEL, (tag) => this.cache.invalidate(tag), {
      onListening: (listening) => this.cache.setListening(listening),
    });
    this.cache.setListening(true);
    return async () => {
      this.cache.setListening(false);
      await unlisten();
    };
  }
}
