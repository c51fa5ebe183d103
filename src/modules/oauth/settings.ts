// The authorization server's fixed settings (docs/mcp.md#oauth). Not environment variables yet: nothing in a
// deployment has needed other values, and each is a security trade-off best changed in review.

export const OAUTH = {
  /** Access tokens for /mcp: short, so a leaked one is worth little; every use is checked against its grant anyway. */
  accessTokenSeconds: 3600,
  /** A refresh token not used within this long expires; each use rotates it (a new one with a new lifetime). */
  refreshTokenSeconds: 30 * 24 * 3600,
  /** Between the user's consent and the client's code exchange (RFC 6749 advises at most 10 minutes). */
  codeSeconds: 120,
  /** The one scope: the tools of the granted wallet, within the grant's ceiling. */
  scope: 'wallet',
  /**
   * Scopes a request may also name, granted as `wallet` (RFC 6749 §3.3 lets the server narrow): `offline_access`,
   * which some clients add to ask for a refresh token (one is always issued). Any other scope is `invalid_scope`.
   */
  ignoredScopes: ['offline_access'] as readonly string[],
  /** Dynamic registrations per client address (X-Forwarded-For only behind TRUST_PROXY) per hour. */
  registrationsPerHour: 30,
  /** Expired codes and tokens are deleted this long after they expired (reuse of one older than that is simply unknown). */
  sweepAfterSeconds: 24 * 3600,
  /** The MCP endpoint, on the api origin: the protected resource every token is for. */
  resourcePath: '/mcp',
} as const;

/** Caps on what a registration may hold. */
export const REGISTRATION_LIMITS = { redirectUris: 10, uriLength: 2000, nameLength: 200 } as const;
