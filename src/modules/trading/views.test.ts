import { describe, expect, it } from 'vitest';
import { sealedDecision } from './views.js';

// What a runtime of another owner's priced strategy shows of each decision: what it did, never why.
describe('sealedDecision', () => {
  it("drops a quant_signal's parameters, signals, rules' values and conditions, keeping the venue's word", () => {
    const tokens = { kind: 'quant_signal', params: { fast: 3, slow: 8 }, signals: [{ symbol: 'BTC-USD', fastSma: 1, slowSma: 2 }], action: 'buy', symbol: 'BTC-USD' };
    expect(sealedDecision(tokens)).toEqual({ kind: 'quant_signal', action: 'buy', symbol: 'BTC-USD' });
    const rules = { kind: 'quant_signal', rules: true, signals: [{ symbol: 'BTC-USD', values: { edge: 1 }, because: ['edge > 2'] }], action: 'hold', symbol: null, belowMinimum: { symbol: 'BTC-USD', size: '0' } };
    expect(sealedDecision(rules)).toEqual({ kind: 'quant_signal', action: 'hold', symbol: null, belowMinimum: { symbol: 'BTC-USD', size: '0' } });
  });

  it("drops an llm_agent's answer, decision and prompt digest, and an invalid answer's error (it quotes the model)", () => {
    const base = { kind: 'llm_agent', model: { provider: 'openai', model: 'm', answeredBy: 'm-1' }, promptDigest: 'sha256:x', answer: { rationale: 'my prompt says' }, usage: { inputTokens: 1, outputTokens: 2 }, cached: false, action: 'hold', symbol: null };
    const kept = { kind: 'llm_agent', model: base.model, usage: base.usage, cached: false, action: 'hold', symbol: null };
    expect(sealedDecision({ ...base, outcome: 'ok', decision: { orders: [], rationale: 'my prompt says' }, error: null })).toEqual({ ...kept, outcome: 'ok' });
    expect(sealedDecision({ ...base, outcome: 'invalid', decision: null, error: 'the model answered without calling submit_decision: my prompt says' })).toEqual({ ...kept, outcome: 'invalid' });
    expect(sealedDecision({ ...base, outcome: 'refused', decision: null, error: 'the account has no openai key' })).toEqual({ ...kept, outcome: 'refused', error: 'the account has no openai key' });
  });

  it("shows the book's exits and the owner's flatten whole, and only what it did for a kind it does not know", () => {
    const exit = { kind: 'exit', reason: 'stop_loss', level: 9, price: 8, action: 'sell', symbol: 'BTC-USD' };
    expect(sealedDecision(exit)).toEqual(exit);
    const flatten = { kind: 'flatten', action: 'sell', symbol: 'BTC-USD' };
    expect(sealedDecision(flatten)).toEqual(flatten);
    expect(sealedDecision({ kind: 'future', secret: 1, action: 'buy', symbol: 'X' })).toEqual({ kind: 'future', action: 'buy', symbol: 'X' });
    expect(sealedDecision(null)).toBeNull();
  });
});
