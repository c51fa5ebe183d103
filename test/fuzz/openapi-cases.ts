// Hostile requests generated from an origin's /openapi.json: for every operation, a valid request
// (from the schema, with real ids from the fixtures), then that request spoiled one way at a time —
// every field given wrong types, its bounds ±1, deep nesting, U+0000, a lone surrogate, a huge
// string; bodies that are not JSON, empty, deep, huge; query parameters repeated, out of range;
// path parameters too long, malformed, unknown, another tenant's.

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  default?: unknown;
}

export interface Operation {
  origin: string;
  method: string;
  /** OpenAPI path with {param} placeholders. */
  path: string;
  secured: boolean;
  body?: JsonSchema;
  query: Array<{ name: string; schema: JsonSchema }>;
  params: string[];
}

export interface FuzzRequest {
  op: Operation;
  label: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

/** What the fixtures know: a value for a field or parameter name, and the caller's credential. */
export interface Hints {
  value(name: string): unknown;
  /** The id another tenant owns for this parameter name (a cross-tenant probe), if any. */
  foreign(name: string): string | undefined;
  credential(op: Operation): string | undefined;
}

type OpenApi = { paths: Record<string, Record<string, { security?: unknown[]; requestBody?: { content: Record<string, { schema: JsonSchema }> }; parameters?: Array<{ in: string; name: string; schema: JsonSchema }> }>> };

export function operationsOf(origin: string, doc: OpenApi): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, spec] of Object.entries(methods)) {
      const parameters = spec.parameters ?? [];
      ops.push({
        origin,
        method: method.toUpperCase(),
        path,
        secured: (spec.security ?? []).length > 0,
        body: spec.requestBody?.content['application/json']?.schema,
        query: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema })),
        params: parameters.filter((p) => p.in === 'path').map((p) => p.name),
      });
    }
  }
  return ops;
}

const NUL = 'x\u0000y';
const LONE = 'x\ud800y';
const deep = (levels: number): unknown => {
  let value: unknown = 'leaf';
  for (let i = 0; i < levels; i++) value = [value];
  return value;
};

/** A valid value for a schema (fixtures first, then the schema's own constraints). */
export function sample(schema: JsonSchema | undefined, name: string, hints: Hints): unknown {
  const hinted = hints.value(name);
  if (hinted !== undefined) return hinted;
  if (!schema) return {};
  if (schema.default !== undefined) return schema.default;
  if (schema.anyOf) return sample(schema.anyOf.find((s) => s.type !== 'null') ?? schema.anyOf[0], name, hints);
  if (schema.enum) return schema.enum[0];
  switch (Array.isArray(schema.type) ? schema.type[0] : schema.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(schema.properties ?? {})) {
        if (schema.required?.includes(key)) out[key] = sample(child, key, hints);
      }
      return out;
    }
    case 'array':
      return [];
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    case 'string':
      return 'f'.repeat(Math.max(1, schema.minLength ?? 1));
    default:
      return {};
  }
}

/** Values that spoil one field: wrong types, bounds ±1, and the hostile strings and shapes. */
function spoiled(schema: JsonSchema, name: string): Array<[string, unknown]> {
  const base = schema.anyOf?.find((s) => s.type !== 'null') ?? schema;
  const out: Array<[string, unknown]> = [
    ['number', 12345],
    ['negative', -1],
    ['float', 1.5],
    ['bool', true],
    ['null', null],
    ['array', [1, 'a']],
    ['object', { a: 1 }],
    ['empty-string', ''],
    ['nul', NUL],
    ['lone-surrogate', LONE],
    ['huge-string', 'h'.repeat(100_000)],
    ['deep-40', deep(40)],
    ['deep-1500', deep(1500)],
    ['object-nul-key', { [NUL]: 1 }],
    ['object-lone-value', { a: LONE }],
    ['string-number', '12'],
    ['big-number', 1e308],
    ['uuid', '00000000-0000-4000-8000-000000000000'],
  ];
  if (base.minLength !== undefined && base.minLength > 0) out.push(['minLength-1', 'a'.repeat(base.minLength - 1)]);
  if (base.maxLength !== undefined) out.push(['maxLength+1', 'a'.repeat(base.maxLength + 1)], ['maxLength', 'a'.repeat(base.maxLength)]);
  if (base.minimum !== undefined) out.push(['minimum-1', base.minimum - 1], ['minimum', base.minimum]);
  // A long poll at its maximum would only measure the wait.
  if (base.maximum !== undefined) out.push(['maximum+1', base.maximum + 1], ...(name === 'waitSeconds' ? [] : ([['maximum', base.maximum]] as Array<[string, unknown]>)));
  if (base.enum) out.push(['not-in-enum', 'not-a-member']);
  return out;
}

/** Every leaf of a body schema as a path of keys. */
function leaves(schema: JsonSchema | undefined, prefix: string[] = []): Array<{ path: string[]; schema: JsonSchema }> {
  if (!schema) return [];
  const base = schema.anyOf?.find((s) => s.type === 'object') ?? schema;
  if (base.type !== 'object' || !base.properties || Object.keys(base.properties).length === 0) return prefix.length ? [{ path: prefix, schema }] : [];
  const out = prefix.length ? [{ path: prefix, schema }] : [];
  for (const [key, child] of Object.entries(base.properties)) out.push(...leaves(child, [...prefix, key]));
  return out;
}

function withValue(body: unknown, path: string[], value: unknown, remove = false): unknown {
  const copy = structuredClone(body) as Record<string, unknown>;
  let target: Record<string, unknown> = copy;
  for (const key of path.slice(0, -1)) {
    if (typeof target[key] !== 'object' || target[key] === null) target[key] = {};
    target = target[key] as Record<string, unknown>;
  }
  const last = path[path.length - 1]!;
  if (remove) delete target[last];
  else target[last] = value;
  return copy;
}

/** All requests for one operation. */
export function casesOf(op: Operation, hints: Hints): FuzzRequest[] {
  const cases: FuzzRequest[] = [];
  const credential = hints.credential(op);
  const auth = (headers: Record<string, string>) => (credential ? { ...headers, authorization: `Bearer ${credential}` } : headers);
  // Destructive operations never get the fixtures' own ids: the fuzz must leave the data intact.
  const destructive = op.method === 'DELETE';
  const params = Object.fromEntries(op.params.map((p) => [p, destructive ? '00000000-0000-4000-8000-00000000dead' : String(hints.value(p) ?? 'missing')]));
  const query = Object.fromEntries(
    op.query.filter((q) => hints.value(q.name) !== undefined).map((q) => [q.name, String(hints.value(q.name))]),
  );
  const validBody = op.body ? sample(op.body, '$body', hints) : undefined;
  const build = (label: string, parts: { params?: Record<string, string>; query?: Array<[string, string]>; headers?: Record<string, string>; payload?: string | null }) => {
    const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => encodePathValue((parts.params ?? params)[name] ?? ''));
    const search = new URLSearchParams(parts.query ?? Object.entries(query)).toString();
    const payload = parts.payload === undefined ? (validBody === undefined ? undefined : JSON.stringify(validBody)) : parts.payload ?? undefined;
    const headers = parts.headers ?? auth(payload === undefined ? {} : { 'content-type': 'application/json' });
    cases.push({ op, label: `${op.method} ${op.path} ${label}`, method: op.method, url: `${path}${search ? `?${search}` : ''}`, headers, payload });
  };

  build('valid', {});
  // Body: each field spoiled, removed, and the body as a whole.
  if (op.body) {
    for (const leaf of leaves(op.body)) {
      for (const [label, value] of spoiled(leaf.schema, leaf.path[leaf.path.length - 1]!)) {
        build(`body.${leaf.path.join('.')}=${label}`, { payload: JSON.stringify(withValue(validBody, leaf.path, value)) });
      }
      build(`body.${leaf.path.join('.')} missing`, { payload: JSON.stringify(withValue(validBody, leaf.path, undefined, true)) });
    }
    const bodies: Array<[string, string]> = [
      ['empty', ''],
      ['null', 'null'],
      ['array', '[]'],
      ['string', '"x"'],
      ['truncated', '{"a":'],
      ['not-json', 'not json'],
      ['deep-1500', JSON.stringify(deep(1500))],
      ['deep-text-100000', '['.repeat(100_000)],
      ['extra-field', JSON.stringify({ ...(validBody as object), unexpected: { deep: deep(20) } })],
      ['proto', '{"__proto__":{"polluted":true}}'],
      ['nul-key', JSON.stringify({ ...(validBody as object), [NUL]: 1 })],
      ['huge-2MB', JSON.stringify({ ...(validBody as object), pad: 'p'.repeat(2_000_000) })],
    ];
    for (const [label, payload] of bodies) build(`body=${label}`, { payload });
    build('content-type text/plain', { headers: auth({ 'content-type': 'text/plain' }), payload: JSON.stringify(validBody) });
    build('content-type missing', { headers: auth({}), payload: JSON.stringify(validBody) });
  }
  // Query: each parameter spoiled and repeated; unknown parameters.
  for (const q of op.query) {
    for (const [label, value] of spoiled(q.schema, q.name)) {
      if (typeof value === 'object' && value !== null) continue;
      build(`query.${q.name}=${label}`, { query: [...Object.entries(query).filter(([k]) => k !== q.name), [q.name, String(value)]] });
    }
    build(`query.${q.name} repeated`, { query: [...Object.entries(query), [q.name, 'a'], [q.name, 'b']] });
  }
  build('query unknown', { query: [...Object.entries(query), ['unknown', NUL]] });
  // Path parameters: too long, malformed, unknown, another tenant's.
  for (const p of op.params) {
    const values: Array<[string, string]> = [
      ['long-150', 'a'.repeat(150)],
      ['long-99', 'a'.repeat(99)],
      ['nul', NUL],
      ['lone-surrogate', LONE],
      ['unknown-uuid', '00000000-0000-4000-8000-000000000001'],
      ['not-uuid', 'not-a-uuid'],
      ['dots', '..'],
      ['sql', "' or 1=1 --"],
    ];
    const foreign = hints.foreign(p);
    if (foreign && !destructive) values.push(['other-tenant', foreign]);
    for (const [label, value] of values) build(`path.${p}=${label}`, { params: { ...params, [p]: value } });
  }
  // Credentials: none, malformed, another kind.
  if (op.secured) {
    const body: Record<string, string> = validBody === undefined ? {} : { 'content-type': 'application/json' };
    for (const [label, value] of [
      ['none', undefined],
      ['malformed', 'Bearer'],
      ['garbage', 'Bearer svc_api_' + 'z'.repeat(40)],
      ['nul', 'Bearer a\tb'],
      ['huge', 'Bearer ' + 'x'.repeat(5000)],
      ['basic', 'Basic dXNlcjpwYXNz'],
    ] as Array<[string, string | undefined]>) {
      build(`auth=${label}`, { headers: value === undefined ? body : { ...body, authorization: value } });
    }
  }
  return cases;
}

/** Percent-encodes a path value; a lone surrogate becomes its (invalid) UTF-8 bytes, as a hostile client sends it. */
function encodePathValue(value: string): string {
  return [...value].map((c) => (/[\ud800-\udfff]/.test(c) ? '%ED%A0%80' : encodeURIComponent(c))).join('');
}

/** Two spoiled requests of one operation combined: the URL (path and query) of one, headers and body of the other. */
export function combine(urlOf: FuzzRequest, rest: FuzzRequest): FuzzRequest {
  return { ...rest, label: `url of [${urlOf.label}] + headers and body of [${rest.label}]`, url: urlOf.url };
}
