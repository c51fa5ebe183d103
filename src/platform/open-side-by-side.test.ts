import { describe, expect, it } from 'vitest';
import { openSideBySide, type Opening } from './open-side-by-side.js';

/** A resource that opens after `ms` (or fails then), and records its close. */
function resource(name: string, ms: number, closed: string[], fails = false): Opening<string> {
  return {
    opened: new Promise((resolve, reject) => setTimeout(() => (fails ? reject(new Error(`${name} failed`)) : resolve(name)), ms)),
    close: async (value) => void closed.push(value),
  };
}

describe('openSideBySide', () => {
  it('answers both when both open, closing neither', async () => {
    const closed: string[] = [];
    expect(await openSideBySide(resource('database', 30, closed), resource('chain', 5, closed))).toEqual(['database', 'chain']);
    expect(closed).toEqual([]);
  });

  it('closes the one that opened when the other fails, after it has opened, and throws the failure', async () => {
    const closed: string[] = [];
    await expect(openSideBySide(resource('database', 5, closed, true), resource('chain', 60, closed))).rejects.toThrow('database failed');
    expect(closed).toEqual(['chain']);
    await expect(openSideBySide(resource('database', 60, closed), resource('chain', 5, closed, true))).rejects.toThrow('chain failed');
    expect(closed).toEqual(['chain', 'database']);
  });

  it('throws the left failure when both fail, closing nothing', async () => {
    const closed: string[] = [];
    await expect(openSideBySide(resource('database', 20, closed, true), resource('chain', 5, closed, true))).rejects.toThrow('database failed');
    expect(closed).toEqual([]);
  });
});
