import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { newId, UUID_PATTERN } from '../../platform/ids.js';
import { oauthErrors } from './errors.js';
import { OAUTH, REGISTRATION_LIMITS } from './settings.js';
import type { ClientRow, OAuthStore } from './store.js';

/**
 * RFC 7591 client metadata as far as we use it. Unknown fields are ignored (§2: the server MAY), values we do not
 * offer are refused with `invalid_client_metadata` rather than silently replaced, so a client never believes it
 * registered something it did not.
 */
const registrationBody = z.looseObject({
  redirect_uris: z.array(z.string()).min(1).max(REGISTRATION_LIMITS.redirectUris),
  token_endpoint_auth_method: z.string().optional(),
  grant_types: z.array(z.string()).max(10).optional(),
  response_types: z.array(z.string()).max(10).optional(),
  client_name: z.string().max(REGISTRATION_LIMITS.nameLength).optional(),
  client_uri: z.string().max(REGISTRATION_LIMITS.uriLength).optional(),
  scope: z.string().max(1000).optional(),
  software_id: z.string().max(200).optional(),
  software_version: z.string().max(200).optional(),
});

const AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post'] as const;
type AuthMethod = (typeof AUTH_METHODS)[number];
const GRANT_TYPES = ['authorization_code', 'refresh_token'];

/** Loopback hosts a native client may listen on (RFC 8252 §7.3); http is allowed there only. */
export const isLoopbackHost = (hostname: string) => hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);

/**
 * Why a redirect URI cannot be registered, or null. The MCP specification: "All redirect URIs MUST be either localhost
 * or use HTTPS"; no fragment (RFC 6749 §3.1.2), no user info (it would be sent to us as a credential-looking string).
 */
export function redirectUriProblem(value: string): string | null {
  if (value.length > REGISTRATION_LIMITS.uriLength) return `is longer than ${REGISTRATION_LIMITS.uriLength} characters`;
  if (!URL.canParse(value)) return 'is not an absolute URI';
  const url = new URL(value);
  if (value.includes('#')) return 'must not have a fragment';
  if (url.username || url.password) return 'must not carry user information';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return null;
  return 'must use https, or http on a loopback host (localhost, 127.0.0.1, [::1])';
}

export interface RegisteredClient {
  client_id: string;
  client_id_issued_at: number;
  client_secret?: string;
  client_secret_expires_at?: number;
  client_name: string;
  client_uri?: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: AuthMethod;
  scope: string;
  software_id?: string;
  software_version?: string;
}

/** Dynamic client registration (RFC 7591), open to anyone as the MCP specification expects; rate-limited per address. */
export class OAuthClients {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: OAuthStore,
  ) {}

  /**
   * The order: the cheap shape checks first, then the rate limit (a malformed request costs no part of the hour),
   * then the row. The secret of a confidential client is shown once, here; only its keyed hash is kept.
   */
  async register(body: unknown, clientAddress: string): Promise<RegisteredClient> {
    const parsed = registrationBody.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = issue.path.join('.') || 'body';
      if (issue.path[0] === 'redirect_uris') throw oauthErrors.invalidRedirectUri(`redirect_uris: ${issue.message}`);
      throw oauthErrors.invalidClientMetadata(`${field}: ${issue.message}`);
    }
    const input = parsed.data;
    for (const [i, uri] of input.redirect_uris.entries()) {
      const problem = redirectUriProblem(uri);
      if (problem) throw oauthErrors.invalidRedirectUri(`redirect_uris[${i}] ${problem}`);
    }
    // RFC 7591 §2: token_endpoint_auth_method defaults to client_secret_basic.
    const method = (input.token_endpoint_auth_method ?? 'client_secret_basic') as AuthMethod;
    if (!AUTH_METHODS.includes(method)) throw oauthErrors.invalidClientMetadata(`token_endpoint_auth_method must be one of ${AUTH_METHODS.join(', ')}`);
    const unsupportedGrant = input.grant_types?.find((g) => !GRANT_TYPES.includes(g));
    if (unsupportedGrant) throw oauthErrors.invalidClientMetadata(`grant_types: ${unsupportedGrant} is not offered (only ${GRANT_TYPES.join(', ')})`);
    if (input.grant_types && !input.grant_types.includes('authorization_code')) throw oauthErrors.invalidClientMetadata('grant_types must include authorization_code');
    if (input.response_types?.some((r) => r !== 'code')) throw oauthErrors.invalidClientMetadata('response_types: only code is offered');
    const clientUri = input.client_uri ? (httpUrl(input.client_uri) ?? fail('client_uri must be an http(s) URL')) : null;
    if (input.scope !== undefined && input.scope.split(' ').some((s) => s !== '' && s !== OAUTH.scope && !OAUTH.ignoredScopes.includes(s))) {
      throw oauthErrors.invalidClientMetadata(`scope: only ${OAUTH.scope} is offered`);
    }

    const hit = await this.ctx.rateLimiter.hit(`oauth-register:${clientAddress}`, { limit: OAUTH.registrationsPerHour, windowSeconds: 3600 });
    if (!hit.allowed) throw oauthErrors.tooManyRegistrations(hit.retryAfterSeconds);

    const issued = method === 'none' ? null : this.ctx.hasher.issue('oauthClient');
    const row = await this.store.insertClient({
      id: newId(),
      name: input.client_name?.trim() || 'Unnamed client',
      clientUri,
      redirectUris: input.redirect_uris,
      tokenEndpointAuthMethod: method,
      secretHash: issued?.hash ?? null,
      softwareId: input.software_id ?? null,
      softwareVersion: input.software_version ?? null,
    });
    return {
      client_id: row.id,
      client_id_issued_at: Math.floor(row.createdAt.getTime() / 1000),
      ...(issued ? { client_secret: issued.secret, client_secret_expires_at: 0 } : {}),
      client_name: row.name,
      ...(row.clientUri ? { client_uri: row.clientUri } : {}),
      redirect_uris: row.redirectUris,
      grant_types: GRANT_TYPES,
      response_types: ['code'],
      token_endpoint_auth_method: method,
      scope: OAUTH.scope,
      ...(row.softwareId ? { software_id: row.softwareId } : {}),
      ...(row.softwareVersion ? { software_version: row.softwareVersion } : {}),
    };
  }

  async byId(clientId: string): Promise<ClientRow | undefined> {
    return UUID_PATTERN.test(clientId) ? this.store.client(clientId) : undefined;
  }

  /**
   * RFC 6749 §2.3.1: the client's own authentication at the token endpoint. HTTP Basic (id and secret form-encoded
   * inside), or client_id and client_secret in the body, never both; a public client (`none`) names itself and
   * sends no secret. Every refusal is `invalid_client` (401), said the same for an unknown id and a wrong secret.
   */
  async authenticate(form: Record<string, string>, authorization: string | undefined): Promise<ClientRow> {
    let id = form.client_id;
    let secret = form.client_secret;
    const basic = /^basic\s+/i.test(authorization ?? '');
    if (basic) {
      if (secret !== undefined) throw oauthErrors.invalidRequest('Client authentication was sent twice (HTTP Basic and client_secret): use one');
      const decoded = Buffer.from(authorization!.replace(/^basic\s+/i, '').trim(), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon < 0) throw oauthErrors.invalidClient('The HTTP Basic credentials are malformed', true);
      const basicId = formDecode(decoded.slice(0, colon));
      if (id !== undefined && id !== basicId) throw oauthErrors.invalidRequest('client_id differs from the HTTP Basic user');
      [id, secret] = [basicId, formDecode(decoded.slice(colon + 1))];
    }
    const refused = () => oauthErrors.invalidClient('Client authentication failed (unknown client, or a wrong or missing client secret)', basic);
    if (!id) throw refused();
    const client = await this.byId(id);
    if (!client) throw refused();
    if (client.tokenEndpointAuthMethod === 'none') {
      if (secret) throw oauthErrors.invalidClient('This client registered as public (token_endpoint_auth_method none): it has no secret to send', basic);
      return client;
    }
    if (!secret || !client.secretHash || !this.ctx.hasher.matches(secret, client.secretHash)) throw refused();
    return client;
  }
}

function fail(message: string): never {
  throw oauthErrors.invalidClientMetadata(message);
}

function httpUrl(value: string): string | null {
  if (!URL.canParse(value)) return null;
  const url = new URL(value);
  return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
}

/** application/x-www-form-urlencoded decoding of one Basic credential part (RFC 6749 §2.3.1, Appendix B). */
function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return value;
  }
}
