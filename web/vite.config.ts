// The web pages: the hosted checkout (opened at an intent's paymentUrl) and the dashboard with the payment
// explorer (/app/). Built into web/dist by bin/build.js and served by the api origin (src/modules/web/):
// everything under /app/, no CDN, so the pages work offline.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

export default defineConfig({
  root: here('.'),
  base: '/app/',
  logLevel: 'warn',
  build: {
    outDir: here('dist'),
    emptyOutDir: true,
    target: 'es2022',
    // Every browser that runs es2022 has modulepreload; the polyfill would only add bytes.
    modulePreload: { polyfill: false },
    rollupOptions: { input: { app: here('app.html'), checkout: here('checkout.html') } },
  },
});
