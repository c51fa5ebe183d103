// Who is signed in: an identity token kept for this tab only (sessionStorage), sent as a bearer token.
// Embedded mode (the dev issuer on the embedded devchain) signs in through the dev issuer (any name);
// otherwise the user pastes the token their provider (or `tollgate dev token`) issued (this page never
// sees a password).
import { field, h, mount, notice } from '../shared/dom.js';
import { json, request } from '../shared/http.js';

const KEY = 'tollgate.identityToken';

export const session = {
  get token(): string | null {
    return sessionStorage.getItem(KEY);
  },
  set(token: string): void {
    sessionStorage.setItem(KEY, token);
  },
  clear(): void {
    sessionStorage.removeItem(KEY);
  },
  /** The token's subject, for the header; the server, not this, decides what the token may do. */
  get subject(): string | null {
    const token = this.token;
    try {
      return token ? (JSON.parse(atob(token.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/'))) as { sub?: string }).sub ?? null : null;
    } catch {
      return null;
    }
  },
};

/** The sign-in form: the dev issuer's when this deployment runs it, else a token field. */
export async function signIn(root: HTMLElement, done: () => void): Promise<void> {
  // Asked of the token route itself, which exists only with the dev issuer on the embedded devchain (the
  // issuer's JWKS is served on an external chain too): an empty body is refused (400) and mints nothing; 404 where absent.
  const devIssuer = (await request('POST', '/dev/identity/token', { body: {} })).status === 400;
  const error = h('div');
  const input = h('input', { name: devIssuer ? 'user' : 'token', required: true, autocomplete: devIssuer ? 'username' : 'off', ...(devIssuer ? { pattern: '[A-Za-z0-9._@:-]{1,200}' } : {}) });
  const form = h(
    'form',
    {
      class: 'card',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        mount(error);
        try {
          const token = devIssuer ? (await json<{ token: string }>('POST', '/dev/identity/token', { body: { sub: input.value.trim() } })).token : input.value.trim();
          session.set(token);
          done();
        } catch (failure) {
          mount(error, notice('error', (failure as Error).message));
        }
      },
    },
    h('h1', {}, 'Sign in'),
    devIssuer
      ? h('p', {}, 'This deployment runs the embedded development identity issuer: any user name signs you in as that user.')
      : h('p', {}, 'Paste an identity token issued by this deployment’s identity provider.'),
    field(devIssuer ? 'User name' : 'Identity token', input),
    h('button', { type: 'submit' }, 'Sign in'),
    error,
  );
  mount(root, form);
  input.focus();
}
