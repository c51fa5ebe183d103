import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { projectPath } from '../../platform/project-root.js';

/** web/dist, built by bin/build.js from web/. */
export const WEB_DIST = projectPath('web', 'dist');

export interface WebAsset {
  body: Buffer;
  /** Compressed once at load: every response after is a lookup. */
  gzip: Buffer;
  type: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/** Every built file by its path under web/dist ("app.html", "assets/app-1a2b.js"); null when the pages were never built. */
export function loadWebAssets(dir = WEB_DIST): Map<string, WebAsset> | null {
  if (!existsSync(join(dir, 'checkout.html'))) return null;
  const assets = new Map<string, WebAsset>();
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const type = TYPES[extname(name)];
    if (!type) continue;
    const body = readFileSync(join(dir, name));
    assets.set(name.split('\\').join('/'), { body, gzip: gzipSync(body, { level: 9 }), type });
  }
  return assets;
}
