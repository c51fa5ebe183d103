// The dashboard (signed-in users) and the payment explorer (anyone), one page under /app/ with hash routes.
import '../shared/styles.css';
import { h, mount, notice } from '../shared/dom.js';
import { HttpError } from '../shared/http.js';
import { agentsPage } from './agents.js';
import { explorerPage } from './explorer.js';
import { authorizePage, connectedAppsPage } from './oauth.js';
import { projectPage, projectsPage } from './projects.js';
import { forgetProjectKeys } from './project-shared.js';
import { session, signIn } from './session.js';
import { tradingPage } from './trading.js';
import { forgetCredential, walletsPage } from './wallets.js';

const content = document.getElementById('content')!;
const nav = document.getElementById('nav')!;

interface Route {
  path: RegExp;
  title: string;
  signedIn: boolean;
  render(root: HTMLElement, match: RegExpMatchArray, query: URLSearchParams): Promise<void>;
}

const routes: Route[] = [
  { path: /^\/projects$/, title: 'Projects', signedIn: true, render: (root) => projectsPage(root) },
  { path: /^\/projects\/([0-9a-f-]{36})$/, title: 'Project', signedIn: true, render: (root, m, q) => projectPage(root, m[1]!, q) },
  { path: /^\/wallets$/, title: 'Wallets', signedIn: true, render: (root) => walletsPage(root) },
  { path: /^\/agents$/, title: 'Agents and credits', signedIn: true, render: (root) => agentsPage(root) },
  { path: /^\/trading$/, title: 'Trading', signedIn: true, render: (root) => tradingPage(root) },
  { path: /^\/connected-apps$/, title: 'Connected apps', signedIn: true, render: (root) => connectedAppsPage(root) },
  // Where an application's authorization request lands (GET /oauth/authorize sends the browser here).
  { path: /^\/authorize$/, title: 'Connect an application', signedIn: true, render: (root, _m, q) => authorizePage(root, q) },
  { path: /^\/explorer$/, title: 'Payment explorer', signedIn: false, render: (root, _m, q) => explorerPage(root, q) },
];

const links = [
  ['#/projects', 'Projects'],
  ['#/wallets', 'Wallets'],
  ['#/agents', 'Agents and credits'],
  ['#/trading', 'Trading'],
  ['#/connected-apps', 'Connected apps'],
  ['#/explorer', 'Payment explorer'],
] as const;

function renderNav(current: string): void {
  const who = session.subject;
  mount(
    nav,
    links.map(([href, label]) => h('a', { href, ...(current.startsWith(href.slice(1)) ? { 'aria-current': 'page' } : {}) }, label)),
    who
      ? h('div', { class: 'who' }, h('p', {}, 'Signed in as ', h('strong', {}, who)), h('button', { type: 'button', class: 'secondary', onclick: signOut }, 'Sign out'))
      : null,
  );
}

/** Ends the session: the identity token, and the management credential and project API keys this tab kept with it. */
function endSession(): void {
  session.clear();
  forgetCredential();
  forgetProjectKeys();
}

function signOut(): void {
  endSession();
  void route();
}

async function route(): Promise<void> {
  const [path = '', search = ''] = (location.hash.slice(1) || '/projects').split('?');
  const found = routes.map((r) => ({ r, m: path.match(r.path) })).find((x) => x.m);
  renderNav(path);
  if (!found) {
    mount(content, h('h1', {}, 'Not found'), h('p', {}, h('a', { href: '#/projects' }, 'Go to your projects')));
    return;
  }
  document.title = `${found.r.title} · Tollgate`;
  if (found.r.signedIn && !session.token) return signIn(content, () => void route());
  try {
    await found.r.render(content, found.m!, new URLSearchParams(search));
  } catch (error) {
    if (error instanceof HttpError && error.status === 401) {
      endSession();
      // Say why: a provider's token the API refuses (wrong issuer or audience, expired) would otherwise loop back here silently.
      return signIn(content, () => void route(), `The server refused the identity token (${error.message}). Sign in again.`);
    }
    mount(content, h('h1', {}, found.r.title), notice('error', (error as Error).message));
  }
  content.focus({ preventScroll: true });
}

window.addEventListener('hashchange', () => void route());
void route();
