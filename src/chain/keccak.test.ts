import { randomBytes } from 'node:crypto';
import { keccak256 as viemKeccak, stringToBytes, toBytes, toHex } from 'viem';
import { beforeAll, describe, expect, it } from 'vitest';
import { keccak256, keccak256Text, keccakReady } from './keccak.js';

describe('keccak256 in WebAssembly', () => {
  beforeAll(() => keccakReady);

  it('equals viem keccak256 for bytes and hex of every length up to two batch transactions', () => {
    for (let i = 0; i < 600; i++) {
      const bytes = randomBytes(i < 300 ? i : Math.floor(Math.random() * 16_000));
      expect(keccak256(bytes)).toBe(viemKeccak(bytes));
      expect(keccak256(toHex(bytes))).toBe(viemKeccak(toHex(bytes)));
    }
  });

  it("equals viem keccak256 of a text's UTF-8 bytes, lone surrogates included", () => {
    const alphabet = ['a', '"', '\\', 'é', '€', '😀', '\uD800', '\uDC00', '\u0000', '0x'];
    for (let i = 0; i < 500; i++) {
      const text = Array.from({ length: Math.floor(Math.random() * 400) }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join('');
      expect(keccak256Text(text)).toBe(viemKeccak(stringToBytes(text)));
    }
  });

  it('hashes the payload hashes\' JSON texts as viem\'s keccak256(toBytes(text)) did before it', () => {
    // A JSON array never reads as hex, so the hashes stored by earlier releases are the ones computed now.
    for (let i = 0; i < 200; i++) {
      const json = JSON.stringify(Array.from({ length: 1 + (i % 9) }, (_, j) => toHex(randomBytes(j * 7)).toLowerCase()));
      expect(keccak256Text(json)).toBe(viemKeccak(toBytes(json)));
    }
    expect(keccak256Text('0xab')).toBe(viemKeccak(stringToBytes('0xab')));
  });

  it('answers hex that is not plain hex as viem does', () => {
    for (const odd of ['0xabc', '0xzz', '0x12zz34', '0x', 'abcd'] as `0x${string}`[]) expect(keccak256(odd)).toBe(viemKeccak(odd));
  });
});
