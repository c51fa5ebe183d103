import fs from 'node:fs';
import path from 'node:path';

/**
 * The agent's daily token budget, in front of every model call the runtime makes (chats, and any call of its
 * own such as a heartbeat): a call starts only while today's tokens (input + output, UTC day) are under the
 * budget, and its usage is counted when it answers, so a call can pass the budget by at most its own size
 * (its output is capped by max_tokens). Kept on the volume, so a restart does not reset the day.
 */
export class TokenBudget {
  #dailyTokens: number;
  readonly #file: string;

  constructor(dataDir: string, dailyTokens: number) {
    this.#file = path.join(dataDir, 'usage.json');
    this.#dailyTokens = dailyTokens;
  }

  set dailyTokens(value: number) {
    this.#dailyTokens = value;
  }

  /** Today's standing: used, the budget, and when the day resets. */
  status(now = new Date()) {
    const day = now.toISOString().slice(0, 10);
    const saved = fs.existsSync(this.#file) ? (JSON.parse(fs.readFileSync(this.#file, 'utf8')) as { day: string; tokens: number }) : null;
    const usedToday = saved?.day === day ? saved.tokens : 0;
    const resetsAt = new Date(`${day}T00:00:00.000Z`);
    resetsAt.setUTCDate(resetsAt.getUTCDate() + 1);
    return { dailyTokens: this.#dailyTokens, usedToday, resetsAt: resetsAt.toISOString() };
  }

  /** Runs a model call if the budget allows it; null (and no call) when today's budget is spent. */
  async spend<T extends { usage: { inputTokens: number; outputTokens: number } }>(call: () => Promise<T>): Promise<T | null> {
    if (this.status().usedToday >= this.#dailyTokens) return null;
    const result = await call();
    const { usedToday } = this.status();
    const day = new Date().toISOString().slice(0, 10);
    fs.writeFileSync(`${this.#file}.tmp`, JSON.stringify({ day, tokens: usedToday + result.usage.inputTokens + result.usage.outputTokens }));
    fs.renameSync(`${this.#file}.tmp`, this.#file);
    return result;
  }
}
