import type { Express } from 'express';

/**
 * Startup check: every payment-middleware key (`GET /weather`) has a handler registered with exactly
 * that method and path, and no handler is spelled like a paid path but differently. A key that misses
 * its handler would leave the real handler unpaid, so the app refuses to start instead.
 */

export interface HandlerRoute {
  method: string; // upper case
  path: string;
}

export class RouteMismatchError extends Error {
  constructor(readonly problems: string[]) {
    super(`Payment route keys do not match the handlers:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'RouteMismatchError';
  }
}

/** Lists the method + path of every handler on the app, including routers mounted at a string path. */
export function listHandlerRoutes(app: Express): HandlerRoute[] {
  // Express 5 keeps its router at `app.router`; there is no public listing API.
  const router = (app as unknown as { router?: { stack: Layer[] } }).router;
  if (!router) throw new Error('listHandlerRoutes: not an Express 5 app (no app.router)');
  return walk(router.stack, '');
}

interface Layer {
  route?: { path: unknown; methods: Record<string, boolean> };
  rawPath?: unknown;
  handle?: { stack?: Layer[] };
}

function walk(stack: Layer[], prefix: string): HandlerRoute[] {
  const routes: HandlerRoute[] = [];
  for (const layer of stack) {
    if (layer.route) {
      const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
      for (const path of paths) {
        if (typeof path !== 'string') continue; // a RegExp route cannot be compared; a paid key then finds no handler
        for (const [method, on] of Object.entries(layer.route.methods)) {
          if (on) routes.push({ method: method.toUpperCase(), path: joinPath(prefix, path) });
        }
      }
    } else if (Array.isArray(layer.handle?.stack) && typeof layer.rawPath === 'string') {
      routes.push(...walk(layer.handle.stack, joinPath(prefix, layer.rawPath)));
    }
  }
  return routes;
}

const joinPath = (prefix: string, path: string) => (prefix === '' || prefix === '/' ? path : path === '/' ? prefix : prefix + path);

/** Case, repeated or trailing slashes and percent-escapes: what loose matching would ignore. */
function loose(path: string): string {
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // keep it raw
  }
  return decoded.toLowerCase().replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
}

const KEY = /^([A-Z]+) (\/\S*)$/;

/** Returns the problems found; empty when the keys and handlers agree. */
export function compareRouteKeys(keys: string[], handlers: HandlerRoute[]): string[] {
  const problems: string[] = [];
  for (const key of keys) {
    const match = KEY.exec(key);
    if (!match) {
      problems.push(`payment key "${key}" must be "METHOD /path" with an explicit upper-case method (e.g. "GET /weather")`);
      continue;
    }
    const [, method, path] = match;
    if (!handlers.some((h) => h.method === method && h.path === path)) {
      problems.push(`payment key "${key}" has no handler registered as ${method} ${path}`);
    }
    for (const h of handlers) {
      if (h.method === method && h.path !== path && loose(h.path) === loose(path)) {
        problems.push(`handler "${h.method} ${h.path}" differs from payment key "${key}" only by case, slashes or escapes; spell both the same`);
      }
    }
  }
  return problems;
}

export function assertRouteKeysMatch(app: Express, keys: string[]): void {
  const problems = compareRouteKeys(keys, listHandlerRoutes(app));
  if (problems.length > 0) throw new RouteMismatchError(problems);
}
