// fetch for the pages: same origin, JSON in and out, errors as one readable message whatever the
// response family (envelope `{code, message}`, intent `{code, message}`, direct `{error: {code, message}}`).

import { learnServerTime } from './server-time.js';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | number | null,
    readonly body: unknown,
  ) {
    super(message);
  }
}

export async function request<T>(method: string, path: string, options: { token?: string | null; body?: unknown; headers?: Record<string, string> } = {}): Promise<{ status: number; body: T; response: Response }> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body), cache: 'no-store' });
  learnServerTime(response);
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  return { status: response.status, body: body as T, response };
}

/** The request's JSON when it succeeded (2xx), else an HttpError with the server's own message. */
export async function json<T>(method: string, path: string, options: Parameters<typeof request>[2] = {}): Promise<T> {
  const { status, body } = await request<T>(method, path, options);
  if (status >= 200 && status < 300) return body;
  throw new HttpError(status, messageOf(body, status), codeOf(body), body);
}

function messageOf(body: unknown, status: number): string {
  const b = body as { message?: unknown; data?: unknown; details?: unknown; error?: { message?: unknown; details?: unknown } } | null;
  const message = typeof b?.message === 'string' ? b.message : typeof b?.error?.message === 'string' ? b.error.message : null;
  // A validation error names each field's problem in its details: say which field and what, not just "validation failed".
  const details = [b?.data, b?.details, b?.error?.details].find(Array.isArray) as { message?: unknown; path?: unknown }[] | undefined;
  const reasons = (details ?? []).filter((d) => typeof d?.message === 'string').map((d) => (typeof d.path === 'string' && d.path !== '/' ? `${d.path}: ${d.message}` : (d.message as string)));
  const said = message ?? `The server answered ${status}`;
  return reasons.length ? `${said}: ${reasons.join('; ')}` : said;
}

function codeOf(body: unknown): string | number | null {
  const b = body as { code?: unknown; error?: { code?: unknown } } | null;
  const code = b?.error?.code ?? b?.code;
  return typeof code === 'string' || typeof code === 'number' ? code : null;
}
