// The typed client of the api origin. `api.d.ts` is generated from the service's /openapi.json by
// `npm run client:generate` (openapi-typescript) and checked for drift by test/client/drift.test.ts;
// requests go through openapi-fetch, so paths, parameters, bodies and answers are all typed.
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './api.js';

export type { components, operations, paths } from './api.js';
export { ConsumeError, consumeQueue, type ConsumeOptions, type ConsumeResult, type QueueEvent } from './consume.js';

export interface TollgateClientOptions {
  /** The api origin, e.g. http://127.0.0.1:8402 */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <token>`: an identity token, a project API key, a wallet credential. */
  token?: string;
  fetch?: typeof fetch;
}

export type TollgateClient = Client<paths>;

export function createTollgateClient({ baseUrl, token, fetch }: TollgateClientOptions): TollgateClient {
  return createClient<paths>({ baseUrl, headers: token ? { authorization: `Bearer ${token}` } : {}, ...(fetch ? { fetch } : {}) });
}
