import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { ApiError, badRequest } from '../../platform/http/errors.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../platform/http/schemas.js';
import { isSafeString } from '../../platform/json-guard.js';
import type { Module, ZodApp } from '../module.js';
import { AuthorizationRequestError, Authorizations } from './authorize.js';
import { OAuthClients } from './clients.js';
import { OAuthError, oauthErrors } from './errors.js';
import { OAuthGrants } from './grants.js';
import { authorizationServerMetadata, bearerChallenge, protectedResourceMetadata, resourceMetadataUrlOf } from './metadata.js';
import { authorizationParams, consentAnswer, consentDecision, consentSchema, grantParams, grantSchema, type AuthorizationParams } from './schemas.js';
import { OAuthStore } from './store.js';
import { OAuthTokens } from './tokens.js';
import { sweepLoop } from './worker.js';
import { oauthClients, oauthTokens } from './tables.js';

declare module '../../context.js' {
  interface Services {
    /** The authorization server of /mcp (docs/mcp.md#oauth): what a 401 from the protected resource says. */
    oauth: {
      /** The WWW-Authenticate value of a 401 (RFC 6750 §3, RFC 9728 §5.1); `refused`: a credential was presented and refused. */
      bearerChallenge(refused?: { description: string }): string;
      resourceMetadataUrl(): string;
    };
  }
}

const PARAMS = Object.keys(authorizationParams.shape) as Array<keyof AuthorizationParams>;
const noStore = { 'cache-control': 'no-store', pragma: 'no-cache' };

/**
 * The authorization server of the MCP endpoint (the MCP specification's authorization: OAuth 2.1 with RFC 9728, 8414,
 * 7591 and PKCE), on the api origin. The protocol endpoints answer as their RFCs say (OAuth errors, no envelope);
 * the consent is a dashboard page (#/authorize) that calls the /v1/oauth routes with the user's identity token, and
 * Connected apps (#/connected-apps) lists and revokes the user's grants.
 */
export function oauthModule(ctx: AppContext): Module {
  const store = new OAuthStore(ctx.db, ctx.clock);
  const clients = new OAuthClients(ctx, store);
  const authorizations = new Authorizations(ctx, store, clients);
  const tokens = new OAuthTokens(ctx, store, clients);
  const grants = new OAuthGrants(ctx, store);
  ctx.auth.register('oauth', tokens.resolve);
  ctx.keyRotation.hashedColumn({ name: 'oauth_clients.secret_hash', table: oauthClients, key: [oauthClients.id], column: oauthClients.secretHash });
  ctx.keyRotation.hashedColumn({ name: 'oauth_tokens.token_hash', table: oauthTokens, key: [oauthTokens.id], column: oauthTokens.tokenHash });
  ctx.services.oauth = {
    bearerChallenge: (refused) => bearerChallenge(ctx.urls.api, refused),
    resourceMetadataUrl: () => resourceMetadataUrlOf(ctx.urls.api),
  };

  const signedIn = ctx.auth.guard(['identity']);
  const security = [{ bearer: [] }];
  const tags = ['oauth'];
  const userOf = (request: FastifyRequest) => principalOf(request, 'identity').userId;

  return {
    name: 'oauth',
    loops: [sweepLoop(store, ctx.log)],
    routes: {
      api: async (app) => {
        app.get(
          '/v1/oauth/consent',
          {
            onRequest: signedIn,
            schema: {
              tags,
              summary: 'The authorization request the consent page shows: the application, where the answer goes, the asset of the ceiling (extension)',
              description: 'The query is the authorization request as the application sent it to /oauth/authorize. 400 `invalid_authorization_request` (its OAuth error in `data.error`) when it cannot be answered.',
              security,
              querystring: authorizationParams,
              response: { 200: envelopeSchema(consentSchema), ...errors(400, 401) },
            },
          },
          async (request) => envelope(await authorizations.describe(request.query)),
        );
        app.post(
          '/v1/oauth/consent',
          {
            onRequest: signedIn,
            config: { audit: { action: 'oauth.consent', target: ({ body }) => (body as { walletId?: string } | null)?.walletId } },
            schema: {
              tags,
              summary: "The user's answer to an authorization request: the application's redirect URI with the code, or with access_denied (extension)",
              description:
                'approve: `walletId`, `managementCredential` (the one that owns the wallet) and `ceiling` (atomic units) make a grant of that wallet to the application, paying under a new wallet credential named `OAuth: <application>`; the answer is the redirect URI with `code`, `state` and `iss`. deny: the redirect URI with `error=access_denied`. 403 `management_credential_refused`; 404 `wallet_not_found`; 409 `wallet_not_active`.',
              security,
              body: consentDecision,
              response: { 200: envelopeSchema(consentAnswer), ...errors(400, 401, 403, 404, 409) },
            },
          },
          async (request) => {
            const { request: params, decision, walletId, managementCredential, ceiling } = request.body;
            if (decision === 'deny') return envelope(await authorizations.deny(params));
            if (!walletId || !managementCredential || !ceiling) throw badRequest('approve needs walletId, managementCredential and ceiling');
            return envelope(await authorizations.approve(userOf(request), params, { walletId, managementCredential, ceiling }));
          },
        );
        app.get(
          '/v1/oauth/grants',
          {
            onRequest: signedIn,
            schema: { tags, summary: 'Connected apps: your grants of a wallet to an application, newest first, each with its ceiling and what it paid (extension)', security, response: { 200: envelopeSchema(z.array(grantSchema)), ...errors(401) } },
          },
          async (request) => envelope(await grants.list(userOf(request))),
        );
        app.delete(
          '/v1/oauth/grants/:grantId',
          {
            onRequest: signedIn,
            config: { audit: { action: 'oauth.grant.revoke' } },
            schema: {
              tags,
              summary: "Revoke a grant: its tokens are refused by every node from the next request on, and its wallet credential is revoked (extension)",
              security,
              params: grantParams,
              response: { 200: envelopeSchema(grantSchema), ...errors(401, 404) },
            },
          },
          async (request) => envelope(await grants.revoke(userOf(request), request.params.grantId)),
        );
        await app.register(async (scope) => protocolRoutes(scope as ZodApp, ctx, { clients, authorizations, tokens }));
      },
    },
  };
}

/** The endpoints the RFCs define, in their own context: OAuth's error shape, and form-encoded bodies for the token endpoint. */
function protocolRoutes(app: ZodApp, ctx: AppContext, parts: { clients: OAuthClients; authorizations: Authorizations; tokens: OAuthTokens }): void {
  const hide = { hide: true };
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const problem = asOAuthError(error, request.url.startsWith('/oauth/register') ? 'invalid_client_metadata' : 'invalid_request');
    if (problem.status >= 500) request.log.error({ err: error, reqId: request.id }, 'OAuth request failed');
    return reply.code(problem.status).headers({ ...problem.headers, ...noStore }).send(problem.body());
  });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_request, body, done) => {
    try {
      done(null, formFields(new URLSearchParams(body as string)));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  const metadata = (document: () => object) => async (_request: FastifyRequest, reply: FastifyReply) => {
    reply.header('cache-control', 'public, max-age=300');
    return document();
  };
  // RFC 9728 §3.1: the resource's own well-known path; the root one too, which clients that start from the origin probe.
  app.get('/.well-known/oauth-protected-resource/mcp', { schema: hide }, metadata(() => protectedResourceMetadata(ctx.urls.api)));
  app.get('/.well-known/oauth-protected-resource', { schema: hide }, metadata(() => protectedResourceMetadata(ctx.urls.api)));
  app.get('/.well-known/oauth-authorization-server', { schema: hide }, metadata(() => authorizationServerMetadata(ctx.urls.api)));

  app.post('/oauth/register', { schema: hide }, async (request, reply) => {
    const client = await parts.clients.register(request.body, request.ip);
    return reply.code(201).headers(noStore).send(client);
  });

  app.post('/oauth/token', { schema: hide }, async (request, reply) => {
    const answer = await parts.tokens.exchange(formOf(request.body), request.headers.authorization);
    return reply.headers(noStore).send(answer);
  });

  // The browser arrives here from the application. A request whose client and redirect URI are proven goes on to
  // the consent page (or back to the application with its error); any other is said here, never redirected.
  app.get('/oauth/authorize', { schema: hide }, async (request, reply) => {
    const query = new URLSearchParams(request.raw.url?.split('?')[1] ?? '');
    const repeated = [...new Set([...query.keys()].filter((name, i, all) => all.indexOf(name) !== i))];
    const params = Object.fromEntries(PARAMS.flatMap((name) => (query.has(name) ? [[name, query.get(name)!]] : []))) as AuthorizationParams;
    try {
      if (Object.values(params).some((value) => !isSafeString(value!) || value!.length > 2000)) {
        throw new AuthorizationRequestError('invalid_request', 'The request has a parameter that is too long or holds characters no parameter may hold.', null);
      }
      const valid = await parts.authorizations.validate(params);
      if (repeated.length > 0) {
        throw new AuthorizationRequestError('invalid_request', `Parameters may appear once; repeated: ${repeated.join(', ')}`, { redirectUri: valid.redirectUri, state: params.state });
      }
      const forwarded = new URLSearchParams(Object.entries(params) as Array<[string, string]>);
      return reply.header('cache-control', 'no-store').redirect(`/app/#/authorize?${forwarded}`, 302);
    } catch (error) {
      if (!(error instanceof AuthorizationRequestError)) throw error;
      if (error.redirectTo) return reply.header('cache-control', 'no-store').redirect(parts.authorizations.errorRedirect(error.redirectTo, error.error, error.description), 302);
      return reply
        .code(400)
        .headers({ 'content-type': 'text/html; charset=utf-8', 'content-security-policy': "default-src 'none'; frame-ancestors 'none'", 'x-content-type-options': 'nosniff', ...noStore })
        .send(refusalPage(error.description));
    }
  });
}

/** A form's fields, each once (RFC 6749 §3.2: "parameters MUST NOT be included more than once"), as the JSON guard wants strings. */
function formFields(form: URLSearchParams): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [name, value] of form) {
    if (Object.hasOwn(fields, name)) throw oauthErrors.invalidRequest(`Parameter ${name} is repeated`);
    if (!isSafeString(name) || !isSafeString(value)) throw oauthErrors.invalidRequest('Parameters must not contain U+0000 or unpaired surrogates');
    fields[name] = value;
  }
  return fields;
}

/** The token request's parameters: the form (RFC 6749), or a flat JSON object of strings from a lenient client. */
function formOf(body: unknown): Record<string, string> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body) || Object.values(body).some((value) => typeof value !== 'string')) {
    throw oauthErrors.invalidRequest('The token request must be application/x-www-form-urlencoded');
  }
  return Object.fromEntries(Object.entries(body)) as Record<string, string>;
}

function asOAuthError(error: FastifyError | Error, clientErrorCode: string): OAuthError {
  if (error instanceof OAuthError) return error;
  const status = error instanceof ApiError ? error.status : ((error as FastifyError).statusCode ?? 500);
  if (status >= 400 && status < 500) return new OAuthError(status === 413 || status === 415 ? status : 400, clientErrorCode, error.message);
  return oauthErrors.serverError();
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The authorization endpoint's own page for a request it must not redirect: the user learns why, and nothing else happens. */
function refusalPage(message: string): string {
  return `<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>Connection refused · Tollgate</title><h1>This connection request cannot be answered</h1><p>${escapeHtml(message)}</p><p>Nothing was granted. Go back to the application and connect it again.</p></html>`;
}
