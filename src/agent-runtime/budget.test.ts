import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cappedGate, TokenBudget, TurnCapReached } from './budget.js';

const dirs: string[] = [];
const budget = (daily: number) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turn-cap-'));
  dirs.push(dir);
  return new TokenBudget(dir, daily);
};
afterEach(() => dirs.splice(0).forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

/** A model call that reports `used` tokens and records the output cap it was made with. */
const calls: number[] = [];
const model = (input: number, output: number) => async (cap: number) => {
  calls.push(cap);
  return { usage: { inputTokens: input, outputTokens: Math.min(output, cap) } };
};

describe("a paid turn's token cap", () => {
  it("shrinks each call's output to what the turn has left, counting the turn's earlier calls", async () => {
    calls.length = 0;
    const day = budget(1_000_000);
    const gate = cappedGate(day.gate, 1_000);
    await gate({ input: 300, maxOutput: 1024, minOutput: 64 }, model(300, 200));
    expect(calls).toEqual([700]);
    // 500 used: the next call's input is 200, so 300 are left for its output.
    await gate({ input: 200, maxOutput: 1024, minOutput: 64 }, model(200, 1024));
    expect(calls).toEqual([700, 300]);
    expect(day.status().usedToday).toBe(1_000);
  });

  it('refuses a call its least output cannot fit, before calling: TurnCapReached, nothing counted', async () => {
    calls.length = 0;
    const day = budget(1_000_000);
    const gate = cappedGate(day.gate, 256);
    await expect(gate({ input: 200, maxOutput: 1024, minOutput: 64 }, model(200, 10))).rejects.toBeInstanceOf(TurnCapReached);
    expect(calls).toEqual([]);
    expect(day.status()).toMatchObject({ usedToday: 0, reserved: 0 });
  });

  it("leaves the day's budget in charge: a spent day refuses (null) whatever the cap", async () => {
    calls.length = 0;
    const gate = cappedGate(budget(0).gate, 10_000);
    expect(await gate({ input: 10, maxOutput: 1024, minOutput: 64 }, model(10, 10))).toBeNull();
    expect(calls).toEqual([]);
  });
});
