// What the project pages share (projects.ts and its sections: project-merchants.ts, project-intents.ts,
// project-queues.ts): the API's shapes of a project, its keys and merchants, the API call with the user's
// session, this tab's memory of project API keys, and the form that shows its action's error. Its own file so
// the sections need not import the page that imports them.
import { h, mount, notice } from '../shared/dom.js';
import { json } from '../shared/http.js';
import { session } from './session.js';

export interface ApiKey { id: string; name: string; prefix: string; status: string; lastUsedAt: string | null; createdAt: string }
export interface Merchant { id: string; name: string; enabled: boolean; payTo: string; network: string; createdAt: string }
export interface Project { id: string; name: string; status: string; intentEventsQueueId?: string | null; refundWalletId?: string | null; createdAt: string; apiKeys: ApiKey[]; merchants: Merchant[] }

export const api = <T>(method: string, path: string, body?: unknown) => json<{ data: T }>(method, path, { token: session.token, body }).then((r) => r.data);

/**
 * Project API keys this tab was shown (a project's first key, a key made here) or was given to create intents,
 * by project id: in memory only, like the Wallets page's management credential, and forgotten on sign-out.
 * Intents are created with a project API key (the API's rule), never with the user's identity token.
 */
export const projectKeys = new Map<string, string>();

export function forgetProjectKeys(): void {
  projectKeys.clear();
}

/** A form whose submit runs `action`, showing its error (in the server's words) under it. */
export function actionForm(title: string, fields: HTMLElement[], submit: string, action: (form: HTMLFormElement) => Promise<void>): HTMLFormElement {
  const feedback = h('div');
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'inline',
      'aria-label': title,
      onsubmit: async (event: Event) => {
        event.preventDefault();
        mount(feedback);
        const button = form.querySelector<HTMLButtonElement>('button[type=submit]')!;
        button.disabled = true;
        try {
          await action(form);
        } catch (error) {
          mount(feedback, notice('error', (error as Error).message));
        } finally {
          button.disabled = false;
        }
      },
    },
    fields,
    h('button', { type: 'submit' }, submit),
    feedback,
  );
  return form;
}
