// The one guard every JSON the service accepts passes: request bodies, and JSON decoded from payment
// headers or upstream answers. PostgreSQL's jsonb is where hostile JSON does harm: deep nesting
// exhausts PGlite's WASM stack (one request killed every later query), and U+0000 or a lone
// surrogate cannot be stored as text at all (a 500 after the work was done). So: a depth limit
// checked on the raw text before parsing, a size limit, and well-formed strings without U+0000.

/** Objects and arrays nest at most this deep (the top-level value is depth 1). */
export const MAX_JSON_DEPTH = 32;
/** Characters of JSON text decoded from a header or an upstream answer (bodies have their own limits). */
export const MAX_JSON_TEXT = 1024 * 1024;

export class JsonGuardError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonGuardError';
  }
}

/** Parses JSON text that passes the guard; throws JsonGuardError (limits) or SyntaxError (not JSON). */
export function parseGuardedJson(text: string, maxText = MAX_JSON_TEXT): unknown {
  if (text.length > maxText) throw new JsonGuardError(`JSON text is longer than ${maxText} characters`);
  const suspect = scanJsonText(text);
  const value: unknown = JSON.parse(text);
  if (suspect) assertSafeJson(value);
  return value;
}

/** Checks an already-parsed value (the store layer's last check, and values built from parsed input). */
export function assertSafeJson(value: unknown): void {
  const problem = findProblem(value, 1);
  if (problem) throw new JsonGuardError(`${pathOf(problem.at)}: ${problem.message}`);
}

export function isSafeJson(value: unknown): boolean {
  return findProblem(value, 1) === null;
}

/** A string a PostgreSQL text column can hold and a JSON encoder can round-trip. */
export function isSafeString(value: string): boolean {
  return !value.includes('\u0000') && !LONE_SURROGATE.test(value);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** An escape of U+0000 or of a surrogate (a pair's halves match too: only the walk tells), or a raw lone surrogate. */
const SUSPECT = new RegExp(`\\\\u(?:0000|[dD][89a-fA-F])|${LONE_SURROGATE.source}`);

/**
 * Depth is counted on the text, outside strings, so a 100,000-level value is refused before it is built
 * (JsonGuardError). Returns whether a string may hold U+0000 or a lone surrogate (SUSPECT: an escaped
 * pair, or an escaped backslash before `u0000`, is a false alarm): only such text needs the parsed value's walk
 * (assertSafeJson). Raw U+0000 is not JSON at all. Strings are skipped with indexOf, not read char by char.
 */
export function scanJsonText(text: string): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) i = closingQuote(text, i);
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) throw new JsonGuardError(`JSON is nested deeper than ${MAX_JSON_DEPTH} levels`);
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return SUSPECT.test(text);
}

/** The index of the quote closing the string opened at `open` (one not escaped), or the text's end if none. */
function closingQuote(text: string, open: number): number {
  for (let quote = text.indexOf('"', open + 1); quote !== -1; quote = text.indexOf('"', quote + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return quote;
  }
  return text.length;
}

/** What is wrong at a place in a value: the path is built only for a value that fails (most pass). */
interface Problem {
  at: (string | number)[];
  message: string;
}

function findProblem(value: unknown, depth: number): Problem | null {
  if (typeof value === 'string') return isSafeString(value) ? null : { at: [], message: 'strings must not contain U+0000 or unpaired surrogates' };
  if (value === null || typeof value !== 'object') return null;
  if (depth > MAX_JSON_DEPTH) return { at: [], message: `JSON is nested deeper than ${MAX_JSON_DEPTH} levels` };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = findProblem(value[i], depth + 1);
      if (problem) return (problem.at.unshift(i), problem);
    }
    return null;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (!isSafeString(key)) return { at: [], message: 'keys must not contain U+0000 or unpaired surrogates' };
    const problem = findProblem((value as Record<string, unknown>)[key], depth + 1);
    if (problem) return (problem.at.unshift(key), problem);
  }
  return null;
}

const pathOf = (at: readonly (string | number)[]) => at.reduce<string>((path, part) => (typeof part === 'number' ? `${path}[${part}]` : `${path}.${part}`), '$');
