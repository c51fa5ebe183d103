import { z } from 'zod';

// The dashboard's routes of the authorization server (/v1/oauth/…): the consent page and Connected apps. The
// protocol endpoints (/oauth/…, /.well-known/…) are specified by their RFCs and kept out of /openapi.json.

/** The parameters of an authorization request (RFC 6749 §4.1.1, RFC 7636, RFC 8707), as the client sent them. */
export const authorizationParams = z.object({
  response_type: z.string().max(100).optional(),
  client_id: z.string().max(200).optional(),
  redirect_uri: z.string().max(2000).optional(),
  code_challenge: z.string().max(200).optional(),
  code_challenge_method: z.string().max(20).optional(),
  scope: z.string().max(1000).optional(),
  resource: z.string().max(2000).optional(),
  state: z.string().max(2000).optional(),
});
export type AuthorizationParams = z.infer<typeof authorizationParams>;

export const consentSchema = z.object({
  client: z.object({ id: z.string(), name: z.string().describe('as the application registered it: anyone may register any name'), uri: z.string().nullable() }),
  redirectUri: z.string(),
  redirectHost: z.string().describe('where the answer goes: the page shows it, as the MCP specification asks'),
  loopback: z.boolean().describe('the answer goes to a program on this computer (localhost): the page warns that any local program could have asked'),
  scope: z.string(),
  resource: z.string().describe('the MCP endpoint the tokens are for'),
  asset: z.object({ network: z.string(), asset: z.string(), symbol: z.string(), decimals: z.number().int() }).describe('the asset the ceiling is counted in'),
});
export type ConsentView = z.infer<typeof consentSchema>;

export const consentDecision = z.object({
  request: authorizationParams,
  decision: z.enum(['approve', 'deny']),
  walletId: z.string().max(100).optional().describe('approve: the wallet to connect'),
  managementCredential: z
    .string()
    .max(4096)
    .optional()
    .describe('approve: the management credential (svc_api_…) that owns the wallet: wallets belong to the application that made them'),
  ceiling: z
    .string()
    .regex(/^[1-9]\d{0,77}$/, 'a positive integer string of atomic units')
    .optional()
    .describe('approve: what the application may pay in all through this grant, atomic units of the asset'),
});
export const consentAnswer = z.object({ redirectTo: z.string().describe('where the browser goes next: the application, with the code (or the error) and the state') });

export const ceilingSchema = z.object({
  network: z.string(),
  asset: z.string(),
  amount: z.string().describe('the ceiling, atomic units'),
  spent: z.string().describe('settled payments of the grant'),
  reserved: z.string().describe('payments of the grant not final yet'),
  remaining: z.string(),
});

export const grantSchema = z.object({
  id: z.string(),
  status: z.enum(['active', 'revoked']),
  revokedReason: z
    .enum(['user', 'code_reused', 'refresh_token_reused', 'wallet_credential_revoked'])
    .nullable()
    .describe('wallet_credential_revoked: the wallet’s owner revoked the credential the grant pays under'),
  client: z.object({ id: z.string(), name: z.string(), uri: z.string().nullable(), redirectHosts: z.array(z.string()) }),
  wallet: z.object({ id: z.string(), name: z.string(), address: z.string().nullable() }),
  walletCredentialId: z.string().describe('the wallet credential its payments are recorded under (GET /v1/wallets/{walletId}/credentials lists it)'),
  ceiling: ceilingSchema,
  scope: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
});
export type GrantView = z.infer<typeof grantSchema>;

export const grantParams = z.object({ grantId: z.string() });
