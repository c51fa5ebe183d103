import { defineConfig } from 'drizzle-kit';

// Each module owns its tables in a tables.ts; migrations are generated from all of them.
export default defineConfig({
  dialect: 'postgresql',
  schema: ['./src/platform/tables.ts', './src/chain/tables.ts', './src/x402/tables.ts', './src/modules/*/tables.ts'],
  out: './migrations',
});
