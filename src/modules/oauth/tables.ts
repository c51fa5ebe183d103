import { sql } from 'drizzle-orm';
import { check, index, numeric, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { guardedJsonb } from '../../platform/db-types.js';

// Tables of the authorization server (docs/mcp.md#oauth). Secrets (client secrets, codes, tokens) are kept only as
// keyed hashes (HMAC-SHA256 under the server pepper). The wallet, its owning management credential and the wallet
// credential a grant pays under are the wallets module's: kept as ids, without foreign keys.

/** Clients registered through RFC 7591 dynamic registration. The id is the `client_id`. */
export const oauthClients = pgTable(
  'oauth_clients',
  {
    id: uuid('id').primaryKey(),
    name: text('name').notNull(),
    clientUri: text('client_uri'),
    /** Exactly as registered: an authorization request must name one of them character for character. */
    redirectUris: guardedJsonb('redirect_uris').$type<string[]>().notNull(),
    /** `none` (a public client), `client_secret_basic` or `client_secret_post`. */
    tokenEndpointAuthMethod: text('token_endpoint_auth_method').notNull(),
    /** Confidential clients only. */
    secretHash: text('secret_hash'),
    softwareId: text('software_id'),
    softwareVersion: text('software_version'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [check('oauth_clients_auth_method_check', sql`${t.tokenEndpointAuthMethod} in ('none', 'client_secret_basic', 'client_secret_post')`)],
);

/**
 * A user's consent: one wallet, to one client, up to a ceiling. `status` active → revoked (by the user, or when a
 * used code or refresh token comes back: reuse means a copy leaked). Payments of the grant are recorded under its
 * own wallet credential, which the wallet's owner sees (and may revoke) among the wallet's credentials.
 */
export const oauthGrants = pgTable(
  'oauth_grants',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => oauthClients.id),
    /** The identity subject who consented. */
    userId: text('user_id').notNull(),
    walletId: uuid('wallet_id').notNull(),
    /** The management credential that owns the wallet (the application), whose the wallet credential is. */
    walletOwnerId: uuid('wallet_owner_id').notNull(),
    walletCredentialId: uuid('wallet_credential_id').notNull(),
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    /** What the grant may pay in all, atomic units of (network, asset). */
    ceiling: numeric('ceiling', { precision: 78, scale: 0 }).notNull(),
    scope: text('scope').notNull(),
    /** The protected resource the tokens are for (RFC 8707): the MCP endpoint. */
    resource: text('resource').notNull(),
    status: text('status').$type<'active' | 'revoked'>().notNull(),
    /** `user`, `code_reused` or `refresh_token_reused`. */
    revokedReason: text('revoked_reason'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [
    check('oauth_grants_status_check', sql`${t.status} in ('active', 'revoked')`),
    check('oauth_grants_ceiling_check', sql`${t.ceiling} > 0`),
    index('oauth_grants_user_idx').on(t.userId, t.createdAt),
  ],
);

/** Authorization codes: short-lived, used once; a second use revokes the grant. */
export const oauthCodes = pgTable(
  'oauth_codes',
  {
    codeHash: text('code_hash').primaryKey(),
    grantId: uuid('grant_id')
      .notNull()
      .references(() => oauthGrants.id),
    /** As the authorization request named it (null when it named none): the token request must name the same. */
    redirectUri: text('redirect_uri'),
    /** PKCE: BASE64URL(SHA-256(code_verifier)); S256 only. */
    codeChallenge: text('code_challenge').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
  },
  (t) => [index('oauth_codes_expires_idx').on(t.expiresAt)],
);

/**
 * Access and refresh tokens of grants. A refresh token is used once (`used_at`: rotated); presented again, the
 * grant is revoked. Every check of a token reads this table and its grant, so a revocation holds on every node at once.
 */
export const oauthTokens = pgTable(
  'oauth_tokens',
  {
    id: uuid('id').primaryKey(),
    grantId: uuid('grant_id')
      .notNull()
      .references(() => oauthGrants.id),
    kind: text('kind').$type<'access' | 'refresh'>().notNull(),
    tokenHash: text('token_hash').notNull().unique(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
  },
  (t) => [
    check('oauth_tokens_kind_check', sql`${t.kind} in ('access', 'refresh')`),
    index('oauth_tokens_grant_idx').on(t.grantId),
    index('oauth_tokens_expires_idx').on(t.expiresAt),
  ],
);
