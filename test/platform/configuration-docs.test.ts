import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { envSchema, SETTINGS } from '../../src/config.js';

// The docs' variable tables (docs/configuration.md for the general ones, each area's doc for its own: every table whose
// header starts `| variable | default |`) against the settings pieces' schemas: every variable Tollgate reads has a
// row, every row names a variable Tollgate reads, and a default the row states as a value is the schema's.
const DOCS = fileURLToPath(new URL('../../docs', import.meta.url));

interface DocRow {
  doc: string;
  line: number;
  names: string[];
  defaults: string[];
}

/** The rows of every `| variable | default | meaning |` table in `markdown`. */
function variableRows(doc: string, markdown: string): DocRow[] {
  const rows: DocRow[] = [];
  let inTable = false;
  markdown.split('\n').forEach((text, index) => {
    if (/^\|\s*variable\s*\|\s*default\s*\|/i.test(text)) return void (inTable = true);
    if (!text.startsWith('|')) return void (inTable = false);
    if (!inTable || /^\|\s*-/.test(text)) return;
    const [first = '', second = ''] = text.split('|').slice(1).map((cell) => cell.trim());
    const names = [...first.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((match) => match[1]!);
    const parts = names.length > 1 ? second.split(/,\s*/) : [second];
    rows.push({ doc, line: index + 1, names, defaults: names.map((_, i) => (parts.length === names.length ? parts[i]! : second)) });
  });
  return rows;
}

/** The value a default cell states: `a backticked value`, or a number; null when it describes one in words. */
function statedValue(cell: string): string | null {
  const ticked = /^`([^`]*)`/.exec(cell.trim());
  if (ticked) return ticked[1]!;
  const number = /^\d[\d_]*(\.\d+)?(?=\s|$|,)/.exec(cell.trim());
  return number ? number[0] : null;
}

function allRows(): DocRow[] {
  return fs
    .readdirSync(DOCS)
    .filter((name) => name.endsWith('.md'))
    .flatMap((name) => variableRows(name, fs.readFileSync(path.join(DOCS, name), 'utf8')));
}

/** The schema's default of each variable, or the default its piece applies in load (`fallbacks`); absent: none. */
function expectedDefaults(): Map<string, string> {
  const defaults = new Map<string, string>();
  for (const [name, schema] of Object.entries(envSchema.shape)) {
    const parsed = schema.safeParse(undefined);
    if (parsed.success && parsed.data !== undefined) defaults.set(name, String(parsed.data));
  }
  for (const piece of SETTINGS) for (const [name, value] of Object.entries(piece.fallbacks ?? {})) defaults.set(name, String(value));
  return defaults;
}

describe('the configuration docs', () => {
  const rows = allRows();
  const known = new Set(Object.keys(envSchema.shape));
  const documented = new Set(rows.flatMap((row) => row.names));

  it('document every variable the settings pieces declare', () => {
    expect([...known].filter((name) => !documented.has(name))).toEqual([]);
  });

  it('document no variable the settings pieces do not declare', () => {
    expect(rows.flatMap((row) => row.names.filter((name) => !known.has(name)).map((name) => `${row.doc}:${row.line}: ${name}`))).toEqual([]);
  });

  it("state each default as the schema's", () => {
    const defaults = expectedDefaults();
    const compared = rows.flatMap((row) => row.names.filter((name, i) => defaults.has(name) && statedValue(row.defaults[i]!) !== null));
    expect(compared.length).toBeGreaterThan(80);
    const wrong = rows.flatMap((row) =>
      row.names.flatMap((name, i) => {
        const stated = statedValue(row.defaults[i]!);
        const expected = defaults.get(name);
        // No default (unset means something, often one derived from other variables): the row says what in words.
        return expected === undefined || stated === null || stated === expected ? [] : [`${row.doc}:${row.line}: ${name} documented ${stated}, default ${expected}`];
      }),
    );
    expect(wrong).toEqual([]);
  });

  it('reads the tables as written', () => {
    const rows = variableRows('x.md', ['| variable | default | meaning |', '|---|---|---|', '| `A_PORT`, `B_PORT` | 1, `2` | ports |', '| `C` | unset → dev | c |', '', '| `D` | 3 | not in a variable table |'].join('\n'));
    expect(rows).toEqual([{ doc: 'x.md', line: 3, names: ['A_PORT', 'B_PORT'], defaults: ['1', '`2`'] }, { doc: 'x.md', line: 4, names: ['C'], defaults: ['unset → dev'] }]);
    expect(['`./.data`', '10000000000000000 (0.01 ETH)', '180 (longer than any settle)', 'unset → PGlite', 'devchain: a key', '`0` on the devchain'].map(statedValue)).toEqual(['./.data', '10000000000000000', '180', null, null, '0']);
  });
});
