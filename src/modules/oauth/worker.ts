import type { Logger } from 'pino';
import type { BackgroundLoop } from '../../platform/jobs.js';
import { OAUTH } from './settings.js';
import type { OAuthStore } from './store.js';

/**
 * Deletes codes and tokens a day after they expired (one leader in the cluster, hourly): each refresh leaves its
 * used pair behind, and a used refresh token must stay until it expires so its reuse is still recognised.
 */
export function sweepLoop(store: OAuthStore, log: Logger): BackgroundLoop {
  return {
    name: 'oauth.sweep',
    intervalMs: 3600_000,
    leader: true,
    async run() {
      const swept = await store.sweep(OAUTH.sweepAfterSeconds);
      if (swept.codes + swept.tokens > 0) log.info(swept, 'expired OAuth codes and tokens deleted');
    },
  };
}
