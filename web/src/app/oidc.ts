// Signing in through the deployment's OpenID provider (docs/web.md#signing-in): the Authorization Code
// flow with PKCE (S256), `state` and `nonce`, this page being the public client (no secret). The token it
// brings back goes to the API, which verifies its signature against the provider's JWKS; this page only
// checks that the answer belongs to the request it made (state, nonce), so it never trusts a claim.
// Nothing here names the provider: its issuer comes from GET /app/sign-in.json at run time.

export interface OidcSettings {
  issuer: string;
  clientId: string;
  scope: string;
  /** Which of the token response's tokens the API is sent. */
  token: 'id_token' | 'access_token';
}

/** What a started sign-in leaves in this tab for its return: the secrets it must match and where it began. */
interface Pending {
  state: string;
  nonce: string;
  verifier: string;
  tokenEndpoint: string;
  returnTo: string;
}

const PENDING = 'tollgate.oidcSignIn';
/** The parameters the provider adds to the redirect URI (RFC 6749 4.1.2, RFC 9207's iss). */
const RETURN_PARAMS = ['code', 'state', 'error', 'error_description', 'error_uri', 'iss', 'session_state'];

/** Registered at the provider as `{PUBLIC_BASE_URL}/app/`: where this page is served. */
export const redirectUri = (): string => `${location.origin}/app/`;

export const providerHost = (settings: OidcSettings): string => new URL(settings.issuer).host;

/** The provider sent the browser back here: a code or an error in this page's query. */
export function providerReturned(): boolean {
  const query = new URLSearchParams(location.search);
  return query.has('error') || (query.has('code') && query.has('state'));
}

/** Sends the browser to the provider's authorization endpoint; the answer comes back to redirectUri(). */
export async function startSignIn(settings: OidcSettings): Promise<void> {
  const { authorizationEndpoint, tokenEndpoint } = await discover(settings);
  const pending: Pending = { state: randomToken(), nonce: randomToken(), verifier: randomToken(), tokenEndpoint, returnTo: location.hash };
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(pending.verifier))));
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const url = new URL(authorizationEndpoint);
  const params = {
    response_type: 'code',
    client_id: settings.clientId,
    redirect_uri: redirectUri(),
    scope: settings.scope,
    state: pending.state,
    nonce: pending.nonce,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  };
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  location.assign(url.href);
}

/** Completes the sign-in the provider sent back here: the token for the API, or an Error in words. */
export async function finishSignIn(settings: OidcSettings): Promise<string> {
  const host = providerHost(settings);
  const query = new URLSearchParams(location.search);
  // Once only, whatever follows: the pending secrets leave storage and the code leaves the address bar
  // and this history entry, so neither a reload nor the back button can replay the answer.
  const pending = takePending();
  const kept = new URLSearchParams([...query].filter(([name]) => !RETURN_PARAMS.includes(name)));
  history.replaceState(history.state, '', `${location.pathname}${kept.size ? `?${kept}` : ''}${pending?.returnTo ?? location.hash}`);

  const error = query.get('error');
  if (error) throw new Error(refusal(host, error, query.get('error_description')));
  // The state ties the answer to a sign-in this tab started (no login CSRF); the iss parameter, when the
  // provider sends it, says which provider answered (RFC 9207).
  if (!pending || query.get('state') !== pending.state) throw new Error(`This answer from ${host} does not belong to a sign-in started in this tab. Sign in again.`);
  const iss = query.get('iss');
  if (iss !== null && iss !== settings.issuer) throw new Error(`The sign-in answer came from ${iss}, not from ${settings.issuer}. Sign in again.`);

  const body = new URLSearchParams({ grant_type: 'authorization_code', code: query.get('code') ?? '', redirect_uri: redirectUri(), client_id: settings.clientId, code_verifier: pending.verifier });
  let response: Response;
  try {
    response = await fetch(pending.tokenEndpoint, { method: 'POST', headers: { accept: 'application/json' }, body, cache: 'no-store', credentials: 'omit' });
  } catch {
    throw new Error(`Could not reach the token endpoint of ${host} (${pending.tokenEndpoint}). Sign in again, or paste a token below.`);
  }
  const tokens = (await response.json().catch(() => null)) as Record<string, unknown> | null;
  if (!response.ok) {
    const reason = [tokens?.error, tokens?.error_description].filter((x): x is string => typeof x === 'string').join(': ') || `it answered ${response.status}`;
    throw new Error(`${host} did not issue tokens for this sign-in (${reason}). Sign in again.`);
  }
  // The nonce ties the id_token to this sign-in (no token injected from another); its signature, issuer,
  // audience and expiry are the API's to verify.
  const idToken = tokens?.id_token;
  if (typeof idToken === 'string') {
    if (unverifiedClaims(idToken)?.nonce !== pending.nonce) throw new Error(`The id_token from ${host} does not answer this sign-in (nonce). Sign in again.`);
  } else if (settings.token === 'id_token') {
    throw new Error(`${host} answered without an id_token (is the scope openid granted to this client?).`);
  }
  const token = tokens?.[settings.token];
  if (typeof token !== 'string' || token === '') throw new Error(`${host} answered without an ${settings.token}.`);
  return token;
}

/** A JWT's payload as it claims to be (no signature check): for display and the nonce only. */
export function unverifiedClaims(token: string): Record<string, unknown> | null {
  try {
    const payload = JSON.parse(new TextDecoder().decode(base64urlDecode(token.split('.')[1] ?? ''))) as unknown;
    return payload && typeof payload === 'object' ? (payload as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * The provider's endpoints from its discovery document (OpenID Connect Discovery 1.0). The page may
 * fetch only from the issuer's origin (its CSP), so a token endpoint elsewhere is refused here, before the
 * user goes to the provider for nothing.
 */
async function discover(settings: OidcSettings): Promise<{ authorizationEndpoint: string; tokenEndpoint: string }> {
  const host = providerHost(settings);
  const where = `${settings.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  let document: Record<string, unknown>;
  try {
    const response = await fetch(where, { headers: { accept: 'application/json' }, cache: 'no-store', credentials: 'omit' });
    if (!response.ok) throw new Error(String(response.status));
    document = (await response.json()) as Record<string, unknown>;
  } catch {
    throw new Error(`Could not read the OpenID configuration of ${host} (${where}). Try again, or paste a token below.`);
  }
  if (document.issuer !== settings.issuer) throw new Error(`The OpenID configuration of ${host} names the issuer ${String(document.issuer)}, not ${settings.issuer}: ask the operator to check IDENTITY_OIDC_ISSUER.`);
  const origin = new URL(settings.issuer).origin;
  const endpoint = (value: unknown, name: string) => {
    const url = typeof value === 'string' && URL.canParse(value) ? new URL(value) : null;
    if (!url || (url.protocol !== 'https:' && url.origin !== origin)) throw new Error(`The OpenID configuration of ${host} has no usable ${name}.`);
    return url;
  };
  const authorization = endpoint(document.authorization_endpoint, 'authorization_endpoint');
  const token = endpoint(document.token_endpoint, 'token_endpoint');
  if (token.origin !== origin) throw new Error(`The token endpoint of ${host} is on another origin (${token.origin}) than its issuer; this page may call only ${origin}.`);
  const methods = document.code_challenge_methods_supported;
  if (Array.isArray(methods) && !methods.includes('S256')) throw new Error(`${host} does not support PKCE with S256, which this page requires.`);
  return { authorizationEndpoint: authorization.href, tokenEndpoint: token.href };
}

function refusal(host: string, error: string, description: string | null): string {
  const words: Record<string, string> = {
    access_denied: `Sign-in was refused at ${host}: access was denied (you declined, or this account may not use this application).`,
    invalid_scope: `${host} refused the scope this deployment asks for (IDENTITY_OIDC_SCOPE).`,
    unauthorized_client: `${host} does not let this client use the authorization code flow (IDENTITY_OIDC_CLIENT_ID).`,
    temporarily_unavailable: `${host} is temporarily unavailable. Try again shortly.`,
    server_error: `${host} failed while signing you in. Try again shortly.`,
  };
  const said = words[error] ?? `${host} could not sign you in (${error}).`;
  return description ? `${said} The provider said: ${description}` : said;
}

function takePending(): Pending | null {
  const stored = sessionStorage.getItem(PENDING);
  sessionStorage.removeItem(PENDING);
  try {
    const pending = stored ? (JSON.parse(stored) as Pending) : null;
    return pending && typeof pending.state === 'string' && (pending.returnTo === '' || pending.returnTo.startsWith('#')) ? pending : null;
  } catch {
    return null;
  }
}

/** 32 random bytes, base64url: 43 characters, as RFC 7636 asks of a code verifier (and plenty for state and nonce). */
function randomToken(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function base64urlDecode(text: string): Uint8Array {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(text.length / 4) * 4, '='));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}
