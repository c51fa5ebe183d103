import { describe, expect, it } from 'vitest';
import { jsonText } from './db-types.js';
import { assertSafeJson, isSafeString, JsonGuardError, MAX_JSON_DEPTH, parseGuardedJson, scanJsonText } from './json-guard.js';

const nestedText = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

describe('the JSON guard', () => {
  it(`accepts ${MAX_JSON_DEPTH} levels and refuses ${MAX_JSON_DEPTH + 1}, on the text and on values`, () => {
    expect(parseGuardedJson(nestedText(MAX_JSON_DEPTH))).toBeDefined();
    expect(() => parseGuardedJson(nestedText(MAX_JSON_DEPTH + 1))).toThrow(JsonGuardError);
    expect(() => assertSafeJson(JSON.parse(nestedText(MAX_JSON_DEPTH + 1)))).toThrow(/deeper than 32/);
  });

  it('refuses 100,000 levels before building them', () => {
    expect(() => parseGuardedJson(nestedText(100_000))).toThrow(JsonGuardError);
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    expect(parseGuardedJson(JSON.stringify({ s: '[[[[{{{{\\"[[[[' + '['.repeat(100) }))).toMatchObject({ s: expect.any(String) });
    // A string ending in an escaped backslash ends at its quote: the brackets after it, outside strings, count.
    expect(parseGuardedJson(JSON.stringify(['\\', '['.repeat(100)]))).toEqual(['\\', '['.repeat(100)]);
    expect(() => parseGuardedJson(`["\\\\", ${nestedText(MAX_JSON_DEPTH)}]`)).toThrow(/deeper than 32/);
  });

  it('refuses U+0000 and unpaired surrogates in strings and keys, keeps real pairs', () => {
    for (const bad of ['{"a":"x\\u0000"}', '{"x\\u0000":1}', '["\\ud800"]', '["\\udc00x"]', '{"\\udfff":1}']) {
      expect(() => parseGuardedJson(bad), bad).toThrow(JsonGuardError);
    }
    expect(parseGuardedJson('["\\ud83d\\ude00"]')).toEqual(['😀']);
    expect(isSafeString('plain ascii and ünïcödé')).toBe(true);
  });

  it('the text scan sends only strings that may be bad to the walk: escapes of U+0000 and surrogates, raw lone halves', () => {
    const verdicts = {
      '{"a":["plain",1,null],"ünï":"cödé"}': false,
      '["\\\\u0000"]': true, // an escaped backslash, then the characters u0000: a false alarm, the walk passes it
      '["😀"]': false,
      '["\\u0000"]': true,
      '["\\uD83D\\uDE00"]': true,
      '["\\udfff"]': true,
      '["\\uDC00"]': true,
      '["a\\"b]"]': false, // an escaped quote does not end the string, nor does the bracket after it count
      '["\uD83D"]': true,
      '["\uDE00x"]': true,
      '{"\\u0000":1}': true,
    };
    for (const [text, suspect] of Object.entries(verdicts)) expect(scanJsonText(text), text).toBe(suspect);
    expect(parseGuardedJson('["\\uD83D\\uDE00", {"k": "\\\\u0000"}]')).toEqual(['😀', { k: '\\u0000' }]);
    expect(() => parseGuardedJson('{"a": [1, {"b": "x\\u0000"}]}')).toThrow('$.a[1].b: strings must not contain U+0000 or unpaired surrogates');
  });

  it('refuses decoded text over its limit and text that is not JSON', () => {
    expect(() => parseGuardedJson('"abc"', 4)).toThrow(JsonGuardError);
    expect(() => parseGuardedJson('{not json')).toThrow(SyntaxError);
  });

  it('the store layer applies the same check before a value is written', () => {
    expect(jsonText({ a: [1, 'two'] })).toBe('{"a":[1,"two"]}');
    expect(() => jsonText({ a: 'x\u0000' })).toThrow(JsonGuardError);
    expect(() => jsonText(JSON.parse(nestedText(40)))).toThrow(JsonGuardError);
  });
});
