// Who is signed in: an identity token kept for this tab only (sessionStorage), sent as a bearer token.
// How one signs in depends on the deployment (GET /app/sign-in.json, docs/web.md#signing-in): with the
// dev issuer on the embedded devchain, any user name; with an OpenID provider configured, through that
// provider (oidc.ts), pasting a token remaining possible; otherwise by pasting the token the provider (or
// `tollgate dev token`) issued. This page never sees a password.
import { field, h, mount, notice } from '../shared/dom.js';
import { json } from '../shared/http.js';
import { finishSignIn, providerHost, providerReturned, startSignIn, unverifiedClaims, type OidcSettings } from './oidc.js';

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
    const sub = this.token ? unverifiedClaims(this.token)?.sub : null;
    return typeof sub === 'string' ? sub : null;
  },
};

type SignInSettings = { mode: 'dev' | 'token' } | ({ mode: 'oidc' } & OidcSettings);

/** The sign-in page: the dev issuer's user-name form, the provider's button above a token field, or the token field. `reason`: why the user is here again. */
export async function signIn(root: HTMLElement, done: () => void, reason?: string): Promise<void> {
  const settings = await json<SignInSettings>('GET', '/app/sign-in.json');
  const error = h('div');
  if (reason) mount(error, notice('error', reason));
  if (settings.mode === 'oidc' && providerReturned()) {
    mount(root, h('h1', {}, 'Signing in…'));
    try {
      session.set(await finishSignIn(settings));
      return done();
    } catch (failure) {
      mount(error, notice('error', (failure as Error).message));
    }
  }
  const dev = settings.mode === 'dev';
  // The pattern is compiled with the `v` flag (current browsers), where a `-` at the end of a class must be escaped.
  const input = h('input', { name: dev ? 'user' : 'token', required: true, autocomplete: dev ? 'username' : 'off', ...(dev ? { pattern: String.raw`[A-Za-z0-9._@:\-]{1,200}` } : {}) });
  const form = h(
    'form',
    {
      class: 'card',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        mount(error);
        try {
          const token = dev ? (await json<{ token: string }>('POST', '/dev/identity/token', { body: { sub: input.value.trim() } })).token : input.value.trim();
          session.set(token);
          done();
        } catch (failure) {
          mount(error, notice('error', (failure as Error).message));
        }
      },
    },
    settings.mode === 'oidc' ? h('h2', {}, 'Or paste an identity token') : h('h1', {}, 'Sign in'),
    dev
      ? h('p', {}, 'This deployment runs the embedded development identity issuer: any user name signs you in as that user.')
      : h('p', {}, 'Paste an identity token issued by this deployment’s identity provider.'),
    field(dev ? 'User name' : 'Identity token', input),
    h('button', { type: 'submit', class: settings.mode === 'oidc' ? 'secondary' : null }, settings.mode === 'oidc' ? 'Sign in with this token' : 'Sign in'),
    settings.mode === 'oidc' ? null : error,
  );
  if (settings.mode !== 'oidc') {
    mount(root, form);
    input.focus();
    return;
  }
  const host = providerHost(settings);
  const button = h('button', { type: 'button' }, `Sign in with ${host}`);
  button.addEventListener('click', async () => {
    mount(error);
    button.disabled = true;
    try {
      await startSignIn(settings); // leaves the page on success
    } catch (failure) {
      mount(error, notice('error', (failure as Error).message));
      button.disabled = false;
    }
  });
  mount(
    root,
    h('section', { class: 'card', 'aria-labelledby': 'sign-in' }, h('h1', { id: 'sign-in' }, 'Sign in'), h('p', {}, `This deployment signs you in through ${host}.`), button, error),
    form,
  );
  button.focus();
}
