import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../platform/http/errors.js';
import { SECRET_PREFIXES } from '../../platform/secrets.js';

/** What /mcp says it refused: the kind of credential presented (named by its public prefix), never whether a guess came close. */
export type RefusedCredential = 'none' | 'wallet_credential' | 'oauth_access_token' | 'oauth_refresh_token' | 'api_key' | 'other';

/** Random characters shown after the family prefix, as the credential's own `prefix` field shows them. */
const SHOWN = 8;

/**
 * The guard of /mcp: a wallet credential, or an OAuth access token of a grant (src/modules/oauth), checked before the
 * body is read. Every 401 carries `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728 §5.1), so an OAuth
 * client (Claude.ai, ChatGPT, mcp-remote) finds the authorization server, and says which credential it refused.
 */
export function mcpCredentialGuard(ctx: AppContext) {
  return async (request: FastifyRequest) => {
    try {
      request.principal = await ctx.auth.authenticate(request.headers.authorization, ['wallet', 'oauth']);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 401) throw error;
      throw refusal(ctx, request.headers.authorization);
    }
  };
}

function refusal(ctx: AppContext, authorization: string | undefined): ApiError {
  const bearer = /^Bearer ([\x21-\x7e]{1,4096})$/.exec(authorization?.trim() ?? '')?.[1];
  const { credential, message } = describe(bearer);
  const shown = bearer ? prefixOf(bearer) : null;
  return new ApiError(
    401,
    'unauthorized',
    message,
    { credential, ...(shown ? { prefix: shown } : {}) },
    { 'www-authenticate': ctx.services.oauth.bearerChallenge(credential === 'none' ? undefined : { description: message }) },
  );
}

function describe(bearer: string | undefined): { credential: RefusedCredential; message: string } {
  const connect = 'Connect with a wallet credential (svc_wallet_…) or through OAuth (this server is its own authorization server)';
  if (!bearer) return { credential: 'none', message: `No credential: send Authorization: Bearer. ${connect}` };
  const shown = prefixOf(bearer);
  if (bearer.startsWith(SECRET_PREFIXES.wallet)) return { credential: 'wallet_credential', message: `The wallet credential ${shown}… was refused: it is unknown, revoked or expired` };
  if (bearer.startsWith(SECRET_PREFIXES.oauthAccess)) {
    return { credential: 'oauth_access_token', message: `The OAuth access token ${shown}… was refused: it is unknown or expired, or its grant was revoked. Refresh it, or authorize again` };
  }
  if (bearer.startsWith(SECRET_PREFIXES.oauthRefresh)) return { credential: 'oauth_refresh_token', message: `${shown}… is an OAuth refresh token: exchange it at the token endpoint for an access token` };
  if (bearer.startsWith(SECRET_PREFIXES.api)) return { credential: 'api_key', message: `${shown}… is a management credential or a project API key, which /mcp does not accept. ${connect}` };
  return { credential: 'other', message: `The bearer token is neither a wallet credential nor an access token of this server. ${connect}` };
}

/** The family prefix and the first characters after it, as the API shows a credential; null for anything that is not ours. */
function prefixOf(bearer: string): string | null {
  const family = Object.values(SECRET_PREFIXES)
    .filter((prefix) => bearer.startsWith(prefix))
    .sort((a, b) => b.length - a.length)[0];
  return family ? bearer.slice(0, family.length + SHOWN) : null;
}
