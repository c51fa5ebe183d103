// compose.yaml's defaults are safe without Docker to check them: every published port binds 127.0.0.1
// unless TOLLGATE_BIND says otherwise, and the stack's environment (with the image's HOST=0.0.0.0) passes
// the checks `serve` makes, the dev identity issuer allowed only by ALLOW_DEV_IDENTITY=1 beside those binds.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface ComposeService {
  environment?: Record<string, string | number | boolean | null> | string[];
  ports?: Array<string | number | { target: number; published?: string | number; host_ip?: string }>;
}

/** compose.yaml as `docker compose config` would read it with `env` as the shell's variables (interpolated, then parsed). */
function composeWith(env: Record<string, string>): { services: Record<string, ComposeService> } {
  const text = fs.readFileSync(path.join(root, 'compose.yaml'), 'utf8');
  return parse(interpolate(text, env)) as { services: Record<string, ComposeService> };
}

/** Compose's interpolation: `$$`, `${NAME}`, `${NAME:-default}` (unset or empty) and `${NAME-default}` (unset). */
function interpolate(text: string, env: Record<string, string>): string {
  return text.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)-([^}]*))?\}/g, (match, name?: string, colon?: string, fallback?: string) => {
    if (match === '$$') return '$';
    const value = env[name!];
    if (fallback === undefined) return value ?? '';
    return value === undefined || (colon === ':' && value === '') ? fallback : value;
  });
}

/** The host address a port entry binds (short syntax `[HOST:]PUBLISHED:TARGET[/proto]` or long syntax); null: every interface. */
function hostIpOf(port: NonNullable<ComposeService['ports']>[number]): string | null {
  if (typeof port === 'object') return port.host_ip ?? null;
  const spec = String(port).replace(/\/\w+$/, '');
  const bracketed = /^\[([^\]]+)\]:/.exec(spec);
  if (bracketed) return bracketed[1]!;
  const parts = spec.split(':');
  return parts.length === 3 ? parts[0]! : null;
}

const environmentOf = (service: ComposeService): Record<string, string> =>
  Array.isArray(service.environment)
    ? Object.fromEntries(service.environment.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]))
    : Object.fromEntries(Object.entries(service.environment ?? {}).map(([key, value]) => [key, value === null ? '' : String(value)]));

/** The final stage's `ENV` of the Dockerfile, continuation lines joined. */
function dockerfileEnv(): Record<string, string> {
  const dockerfile = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const finalStage = dockerfile.split(/^FROM /m).at(-1)!;
  const env: Record<string, string> = {};
  for (const line of finalStage.split('\n').filter((l) => l.startsWith('ENV '))) {
    for (const [, key, value] of line.slice(4).matchAll(/([A-Za-z_][A-Za-z0-9_]*)=(\S*)/g)) env[key!] = value!;
  }
  return env;
}

describe('compose.yaml', () => {
  it('publishes every port on 127.0.0.1 by default', () => {
    const { services } = composeWith({});
    const published = Object.entries(services).flatMap(([name, service]) => (service.ports ?? []).map((port) => ({ name, port, hostIp: hostIpOf(port) })));
    expect(published.length).toBeGreaterThanOrEqual(4); // api, facilitator, relay, assets
    for (const entry of published) expect(entry.hostIp, `${entry.name} ${JSON.stringify(entry.port)}`).toBe('127.0.0.1');
  });

  it('publishes on the address TOLLGATE_BIND names', () => {
    const { services } = composeWith({ TOLLGATE_BIND: '0.0.0.0' });
    expect(services.tollgate!.ports!.map(hostIpOf)).toEqual(['0.0.0.0', '0.0.0.0', '0.0.0.0', '0.0.0.0']);
  });

  it('runs the dev identity issuer in the image (HOST=0.0.0.0) only through ALLOW_DEV_IDENTITY=1, which serve accepts', () => {
    const image = dockerfileEnv();
    expect(image.HOST).toBe('0.0.0.0');
    const stack = { ...image, ...environmentOf(composeWith({}).services.tollgate!) };
    expect(stack.ALLOW_DEV_IDENTITY).toBe('1');
    expect(stack.IDENTITY_JWKS_URL ?? '').toBe('');
    const config = loadConfig(stack);
    expect(config.host).toBe('0.0.0.0');
    expect([...config.devKeyProblems, ...config.devIdentityProblems]).toEqual([]);
    // Without the allowance the same stack is refused: the check is what keeps a public bind from minting tokens.
    const refused = loadConfig({ ...image, ...environmentOf(composeWith({ ALLOW_DEV_IDENTITY: '0' }).services.tollgate!) });
    expect(refused.devIdentityProblems.map((p) => p.split(':')[0])).toEqual(['HOST']);
  });
});
