import { z } from 'zod';

// A settings piece: the environment variables one module (or layer) reads, with their schema and defaults, what they
// become in the Config, and the combinations that stop the process at start. src/config.ts composes the pieces into
// one schema, parsed once, so a start with bad variables names every one of them together. Each variable's docs row
// lives in the docs (docs/configuration.md or the module's doc); test/platform/configuration-docs.test.ts holds the
// rows to the schemas. A piece imports only zod, this file and the pieces whose variables it reads.

export type Shape = Record<string, z.ZodType>;
/** The parsed variables of a shape. */
export type EnvOf<S extends Shape> = { [K in keyof S]: z.output<S[K]> };

export interface Settings<S extends Shape, R extends Shape, T> {
  /** The variables this piece owns: each is declared by exactly one piece. */
  env: S;
  /** Other pieces' variables this one reads (their owners' schemas, e.g. `{ CHAIN_RPC_URL: chainSettings.env.CHAIN_RPC_URL }`). */
  reads?: R;
  /**
   * Defaults applied in `load` rather than in the schema (there, unset means something to a check): what the docs'
   * default column says for them.
   */
  fallbacks?: { [K in keyof S]?: string };
  /** What the variables become: this piece's fields of the Config. */
  load(e: EnvOf<S & R>): T;
  /** Combinations that stop the process at start, each naming its variable first. */
  problems?(e: EnvOf<S & R>): string[];
  /**
   * Variables of this piece left unset so that a dev key (generated into the data dir) is used: `serve` refuses them
   * beside a shared database or a real chain unless ALLOW_DEV_KEYS=1 (see devKeyProblems in src/config.ts).
   */
  devKeys?(e: EnvOf<S & R>): string[];
}

/** Declares a settings piece; the types of `e` in `load`, `problems` and `devKeys` follow from `env` and `reads`. */
export function defineSettings<S extends Shape, T, R extends Shape = {}>(piece: Settings<S, R, T>): Settings<S, R, T> {
  return piece;
}

type AnySettings = Settings<any, any, object>;
type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
/** The Config the pieces compose: every piece's fields together. */
export type Composed<P extends readonly AnySettings[]> = UnionToIntersection<ReturnType<P[number]['load']>>;
/** Every variable the pieces declare, parsed. */
export type ComposedEnv<P extends readonly AnySettings[]> = UnionToIntersection<EnvOf<P[number]['env']>>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** One schema of every piece's variables; a variable declared twice, or read but declared by none, is a bug here. */
export function composeSchema(pieces: readonly AnySettings[]) {
  const shape: Shape = {};
  for (const piece of pieces) {
    for (const [name, schema] of Object.entries(piece.env as Shape)) {
      if (name in shape) throw new Error(`settings: ${name} is declared by two pieces`);
      shape[name] = schema;
    }
  }
  for (const piece of pieces) {
    for (const name of Object.keys(piece.reads ?? {})) if (!(name in shape)) throw new Error(`settings: ${name} is read but declared by no piece`);
  }
  return z.object(shape);
}

/**
 * Parses `env` against the composed schema (an empty variable counts as unset) and runs each piece's checks: throws
 * ConfigError naming every bad variable, else answers the parsed variables, the composed fields and the variables
 * whose dev key would be used (in the pieces' order).
 */
export function loadSettings<P extends readonly AnySettings[]>(pieces: P, schema: z.ZodType, env: NodeJS.ProcessEnv): { e: ComposedEnv<P>; fields: Composed<P>; devKeys: string[] } {
  const parsed = schema.safeParse(stripEmpty(env));
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  const e = parsed.data as EnvOf<Shape>;
  const problems = pieces.flatMap((piece) => piece.problems?.(e) ?? []);
  if (problems.length > 0) throw new ConfigError(problems);
  const fields = Object.assign({}, ...pieces.map((piece) => piece.load(e))) as Composed<P>;
  return { e: e as ComposedEnv<P>, fields, devKeys: pieces.flatMap((piece) => piece.devKeys?.(e) ?? []) };
}

// An empty variable (`FOO=`) means "unset", as most operators expect.
function stripEmpty(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value !== '') out[key] = value;
  return out;
}

// The small schemas the pieces share.
export const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
export const optionalUrl = z.url().optional();
export const optionalString = z.string().min(1).optional();
export const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
/** A price in US dollars of USDG (6 decimals at most); 0 or unset: free. */
export const usdPrice = z.string().regex(/^\d{1,9}(\.\d{1,6})?$/, 'must be a dollar amount such as 0.01 (at most 6 decimals)').optional();
export const basisPoints = (fallback: number) => z.coerce.number().min(0).max(10_000).default(fallback);
export const hexKey = z.string().regex(/^(0x)?[0-9a-fA-F]{64}$/, 'must be 32 bytes of hex').optional();
export const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address').optional();
export const addressList = z
  .string()
  .regex(/^\s*(0x[0-9a-fA-F]{40}\s*(,\s*0x[0-9a-fA-F]{40}\s*)*)?$/, 'must be a comma-separated list of 0x-prefixed 20-byte addresses')
  .optional();
export const weiAmount = (fallback: string) => z.string().regex(/^\d{1,40}$/, 'must be a whole number of wei').default(fallback);
export const atomicAmount = (digits: number, fallback: string) => z.string().regex(new RegExp(`^\\d{1,${digits}}$`), 'an integer number of atomic units').default(fallback);

export function trimSlash(url: string | undefined): string | undefined {
  return url?.replace(/\/+$/, '');
}

/** A comma-separated list, each entry trimmed, empty ones dropped. */
export function list(value: string | undefined): string[] {
  return (value ?? '').split(',').map((item) => item.trim()).filter(Boolean);
}
