import fs from 'node:fs';
import path from 'node:path';
import type { Gate, TokenAsk, Usage } from './model-types.js';

interface Day {
  day: string;
  tokens: number;
}

const today = (now = new Date()) => now.toISOString().slice(0, 10);

/**
 * The agent's daily token budget, in front of every model call the runtime makes. A call is admitted only
 * when today's use, what calls in flight have reserved and its own reservation all fit the budget: its input
 * (counted with a tokenizer, models.ts) and an output cap, the call's own when it fits, else what is left, but
 * never less than its minimum (the call is then refused). The call is made with that cap, so it cannot write
 * past the budget; its reservation is trued up to the usage it reports. This process is the only one that
 * spends the agent's budget and JavaScript runs one admission at a time, so parallel sessions can never pass
 * it together. Use is kept on the volume: a restart does not reset the day.
 */
export class TokenBudget {
  #dailyTokens: number;
  #reserved = 0;
  #used: Day;
  readonly #file: string;

  constructor(dataDir: string, dailyTokens: number) {
    this.#file = path.join(dataDir, 'usage.json');
    this.#dailyTokens = dailyTokens;
    this.#used = fs.existsSync(this.#file) ? (JSON.parse(fs.readFileSync(this.#file, 'utf8')) as Day) : { day: today(), tokens: 0 };
  }

  set dailyTokens(value: number) {
    this.#dailyTokens = value;
  }

  #usedToday(): number {
    return this.#used.day === today() ? this.#used.tokens : 0;
  }

  /** Today's standing: used, reserved by calls in flight, the budget, and when the day resets. */
  status(now = new Date()) {
    const resetsAt = new Date(`${today(now)}T00:00:00.000Z`);
    resetsAt.setUTCDate(resetsAt.getUTCDate() + 1);
    return { dailyTokens: this.#dailyTokens, usedToday: this.#usedToday(), day: today(now), reserved: this.#reserved, resetsAt: resetsAt.toISOString() };
  }

  /** Runs a model call if its input and at least its least output fit what is left; null (and no call) otherwise. A failed call counts nothing. */
  gate = async <T extends { usage: Usage }>(ask: TokenAsk, call: (outputCap: number) => Promise<T>): Promise<T | null> => {
    const left = this.#dailyTokens - this.#usedToday() - this.#reserved - ask.input;
    if (left < ask.minOutput || left <= 0) return null;
    const outputCap = Math.min(ask.maxOutput, left);
    const estimate = ask.input + outputCap;
    this.#reserved += estimate;
    let result: T;
    try {
      result = await call(outputCap);
    } finally {
      this.#reserved -= estimate;
    }
    this.#record(result.usage.inputTokens + result.usage.outputTokens);
    return result;
  };

  #record(tokens: number): void {
    this.#used = { day: today(), tokens: this.#usedToday() + tokens };
    fs.writeFileSync(`${this.#file}.tmp`, JSON.stringify(this.#used));
    fs.renameSync(`${this.#file}.tmp`, this.#file);
  }
}

/** A paid turn's own token cap cannot cover its next model call: none is made. */
export class TurnCapReached extends Error {
  constructor(readonly maxTokens: number) {
    super(`this turn's token cap (${maxTokens}) cannot cover its next model call`);
  }
}

/**
 * A turn's own cap in front of the day's budget (a turn paid per token: its buyer signed for at most `maxTokens`): a
 * call is admitted only when the turn's use so far, its input and its least output fit the cap, and its output cap
 * shrinks to what the turn has left; then the day's budget decides as for any call. A turn runs its calls one after
 * another, so the count needs no lock. Refused, it throws TurnCapReached (the day's budget refusing stays null).
 */
export function cappedGate(gate: Gate, maxTokens: number): Gate {
  let used = 0;
  return async (ask, call) => {
    const left = maxTokens - used - ask.input;
    if (left < ask.minOutput || left <= 0) throw new TurnCapReached(maxTokens);
    const result = await gate({ ...ask, maxOutput: Math.min(ask.maxOutput, left) }, call);
    if (result) used += result.usage.inputTokens + result.usage.outputTokens;
    return result;
  };
}
