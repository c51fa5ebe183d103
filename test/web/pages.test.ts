// How the api origin serves the built pages: the dashboard under /app/, hashed assets cached for good
// and gzipped, the checkout at a paymentUrl for a browser only (POST stays the x402 pay contract), and a
// CSP that allows nothing but this origin.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEB_DIST } from '../../src/modules/web/assets.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => app?.close());

const get = (url: string, headers: Record<string, string> = {}) => app.origins.api!.inject({ method: 'GET', url, headers });
const intentUrl = '/v1/payment-intents/01900000-0000-7000-8000-000000000000/pay';

describe('the web pages on the api origin', () => {
  it('serves the dashboard at /app/ with a same-origin CSP, and redirects /app', async () => {
    expect((await get('/app')).headers.location).toBe('/app/');
    const page = await get('/app/');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['cache-control']).toBe('no-cache');
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/unsafe-inline|https?:/);
    // No CDN: every script and stylesheet the page names is one of ours (the icon is inline, below).
    for (const src of page.body.matchAll(/(?:src|href)="([^"#][^"]*)"/g)) expect(src[1]).toMatch(/^(?:\/app\/assets\/|data:image\/svg\+xml,)/);
  });

  it('names its favicon inline, as an SVG data: URL the CSP allows (img-src data:): no request for /favicon.ico', async () => {
    const page = await get('/app/');
    const icon = page.body.match(/<link rel="icon" type="image\/svg\+xml" href="(data:image\/svg\+xml,[^"]+)"/);
    expect(icon).not.toBeNull();
    expect(decodeURIComponent(icon![1]!.slice('data:image/svg+xml,'.length))).toMatch(/^<svg [^>]*xmlns='http:\/\/www\.w3\.org\/2000\/svg'[^>]*>.*<\/svg>$/);
    expect(String(page.headers['content-security-policy'])).toMatch(/img-src 'self' data:/);
  });

  it('tells the dashboard how to sign in: the dev issuer\'s form here, on the embedded devchain', async () => {
    const settings = await get('/app/sign-in.json');
    expect(settings.statusCode).toBe(200);
    expect(settings.headers['cache-control']).toBe('no-cache');
    expect(settings.json()).toEqual({ mode: 'dev' });
    // Unlike the pages, a JSON route: described in the OpenAPI document with its answers.
    const described = (await get('/openapi.json')).json().paths['/app/sign-in.json'];
    expect(described.get.responses['200']).toBeDefined();
  });

  it('names no external URL in any built file (html, js, css), but for text that is never fetched', () => {
    // URLs that appear as text only: XML namespace names, and the documentation link viem puts in its error messages.
    const neverFetched = [/^http:\/\/www\.w3\.org\//, /^https:\/\/viem\.sh(?:\/|$)/];
    const files = readdirSync(WEB_DIST, { recursive: true, encoding: 'utf8' }).filter((file) => statSync(path.join(WEB_DIST, file)).isFile());
    expect(files.filter((file) => /\.(?:html|js|css)$/.test(file)).length).toBeGreaterThanOrEqual(4);
    const external = files.flatMap((file) =>
      [...readFileSync(path.join(WEB_DIST, file), 'latin1').matchAll(/\b(?:https?|wss?):\/\/[^\s"'`<>()\\,;]*/g)]
        .map((match) => match[0])
        .filter((url) => !neverFetched.some((allowed) => allowed.test(url)))
        .map((url) => `${file}: ${url}`),
    );
    expect(external).toEqual([]);
  });

  it('serves hashed assets immutable, gzipped when asked, and 404 for anything else', async () => {
    const page = await get('/app/');
    const script = page.body.match(/src="(\/app\/assets\/[^"]+\.js)"/)![1]!;
    const plain = await get(script);
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const gzipped = await get(script, { 'accept-encoding': 'gzip, br' });
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzipped.rawPayload).toString()).toBe(plain.body);
    expect((await get('/app/assets/nothing-here.js')).statusCode).toBe(404);
    expect((await get('/app/assets/..%2Fapp.html')).statusCode).toBe(400);
  });

  it('keeps the checkout first load within 150 KB of JavaScript, gzipped', async () => {
    const page = await get(intentUrl, { accept: 'text/html' });
    const scripts = [...page.body.matchAll(/<(?:script|link)[^>]+(?:src|href)="(\/app\/assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    let gzipped = 0;
    for (const script of scripts) gzipped += (await get(script, { 'accept-encoding': 'gzip' })).rawPayload.length;
    expect(gzipped).toBeLessThanOrEqual(150 * 1024);
  });

  it('answers a browser at a paymentUrl with the checkout page (404 for an unknown intent), other GETs with 406, all with Vary: Accept', async () => {
    const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
    // A real intent: its page answers 200.
    const owner = { authorization: `Bearer ${await app.identityToken('pages')}` };
    const made = (await app.origins.api!.inject({ method: 'POST', url: '/v1/projects', headers: owner, payload: { name: 'pages' } })).json().data;
    const merchant = (await app.origins.api!.inject({ method: 'POST', url: `/v1/projects/${made.project.id}/merchants`, headers: owner, payload: { name: 'pages', payTo: `0x${'ab'.repeat(20)}` } })).json().data;
    const intent = (await app.origins.api!.inject({ method: 'POST', url: '/v1/payment-intents', headers: { authorization: `Bearer ${made.apiKey.secret}` }, payload: { merchantId: merchant.id, amountUsdCents: 100, externalId: 'pages-1' } })).json();
    const known = await get(new URL(intent.paymentUrl).pathname, html);
    expect(known.statusCode).toBe(200);
    expect(known.body).toContain('<div class="card" id="checkout"');
    expect(known.headers['content-security-policy']).toContain("connect-src 'self'");
    expect(String(known.headers.vary)).toMatch(/\baccept\b/i);
    // An unknown one: the same friendly page (it says the link is wrong), with the status that says so.
    const page = await get(intentUrl, html);
    expect(page.statusCode).toBe(404);
    expect(page.body).toContain('<div class="card" id="checkout"');
    const json = await get(intentUrl, { accept: 'application/json' });
    expect(json.statusCode).toBe(406);
    expect(json.json()).toMatchObject({ code: 'not_acceptable' });
    expect(String(json.headers.vary)).toMatch(/\baccept\b/i);
    // POST is still the pay contract: a challenge (here 404, the intent does not exist), never the page.
    const post = await app.origins.api!.inject({ method: 'POST', url: intentUrl, headers: { accept: 'text/html' } });
    expect(post.statusCode).toBe(404);
    expect(post.headers['content-type']).toContain('application/json');
  });
});
