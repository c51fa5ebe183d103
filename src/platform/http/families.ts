import type { ListenerName } from '../server-settings.js';

/**
 * The spec's response families. Success bodies are chosen by each route; errors and 404s are
 * rendered by the family that owns the path:
 * - envelope: `{ code: number, message, data }` (wallets, projects, agents, storage, events, health)
 * - intent:   `{ code: string, message, details? }` (payment intents)
 * - direct:   `{ error: { code, message, details? } }` (x402 objects, transaction API, test endpoints,
 *             facilitator, assets, dev helpers)
 * - relay:    the direct shape plus `success: false, accepted: false` (payment relay)
 */
export type Family = 'envelope' | 'intent' | 'direct' | 'relay';

const API_PREFIXES: Array<[string, Family]> = [
  ['/v1/payment-intents', 'intent'],
  ['/x402scan', 'direct'],
  ['/x402-test', 'direct'],
  ['/dev/chain', 'direct'],
  ['/dev/identity', 'direct'],
];

export function familyOf(origin: ListenerName, url: string): Family {
  if (origin === 'relay') return 'relay';
  if (origin !== 'api') return 'direct';
  const path = url.split('?')[0];
  for (const [prefix, family] of API_PREFIXES) {
    if (path === prefix || path.startsWith(`${prefix}/`)) return family;
  }
  return 'envelope';
}
