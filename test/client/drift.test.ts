// The typed client's types must be what the service's /openapi.json generates today: a route or
// schema changed without `npm run client:generate` fails here (and so in CI).
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { apiSpec, CLIENT_TYPES, clientTypes } from '../../scripts/generate-client.js';

describe('packages/client types', () => {
  it('match the api origin\'s /openapi.json (run `npm run client:generate` after changing a route)', async () => {
    const spec = await apiSpec();
    const committed = fs.readFileSync(CLIENT_TYPES, 'utf8');
    const generated = await clientTypes(spec);
    expect(generated === committed, 'packages/client/src/api.d.ts is stale: run `npm run client:generate`').toBe(true);

    // The check sees a changed route: one more path in the spec gives other types.
    const paths = spec.paths as Record<string, unknown>;
    const changed = { ...spec, paths: { ...paths, '/v1/not-regenerated': Object.values(paths)[0] } };
    expect(await clientTypes(changed)).not.toBe(committed);
  }, 120_000);
});
