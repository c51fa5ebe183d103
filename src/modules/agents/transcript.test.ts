import { describe, expect, it } from 'vitest';
import type { TranscriptEntry } from './chat-store.js';
import { trimToContext } from './transcript.js';

const user = (content: string): TranscriptEntry => ({ role: 'user', content });
const assistant = (content: string, toolCalls?: unknown[]): TranscriptEntry => ({ role: 'assistant', content, ...(toolCalls ? { toolCalls } : {}) });
const tool = (content: string): TranscriptEntry => ({ role: 'tool', toolCallId: 'c1', name: 'pay_and_call', content });

describe('trimToContext', () => {
  it('sends a session that fits as it is', () => {
    const entries = [{ role: 'system', content: 'be brief' }, user('a'), assistant('b')];
    expect(trimToContext(entries, 10_000)).toEqual(entries);
  });

  it('drops the oldest turns first, keeps system entries, and never starts at a tool result or an assistant', () => {
    const big = 'x'.repeat(400);
    const entries = [
      { role: 'system', content: 'rules' },
      user(`first ${big}`),
      assistant('', [{ id: 'c1', name: 'pay_and_call', input: {} }]),
      tool(big),
      assistant(`paid ${big}`),
      user('second'),
      assistant('ok'),
      user('third'),
    ];
    const trimmed = trimToContext(entries, 700);
    expect(trimmed[0]).toEqual({ role: 'system', content: 'rules' });
    expect(trimmed.slice(1)).toEqual([user('second'), assistant('ok'), user('third')]);
    expect(Buffer.byteLength(JSON.stringify(trimmed))).toBeLessThan(700);
  });

  it('keeps the newest user message even when it alone is over the budget', () => {
    const entries = [user('old'), assistant('reply'), user('y'.repeat(2_000))];
    expect(trimToContext(entries, 100)).toEqual([user('y'.repeat(2_000))]);
  });
});
