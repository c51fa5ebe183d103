// When a batch leaves: the scheduling alone, over a lane whose sends the test answers by hand (the devchain
// tests in test/facilitator/batch.test.ts cover what a batch does on chain).
import type { Hash, Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { MULTICALL3_ADDRESS } from '../../chain/multicall3.js';
import { SettlementBatcher, type BatchPolicy } from './batcher.js';
import type { RelayerPool } from './relayer-pool.js';
import type { RelayerTx } from './sender.js';

/** A lane that queues sends like the real one (one at a time) and answers each when the test says so. */
class HandLane {
  queued = 0;
  /** Transactions sent and not yet seen mined (the test says how many). */
  unmined = 0;
  get busy(): number {
    return this.queued + this.unmined;
  }
  readonly sent: RelayerTx[] = [];
  #answers: Array<() => void> = [];
  #queue: Promise<unknown> = Promise.resolve();

  send(tx: RelayerTx): Promise<Hash> {
    this.queued += 1;
    const run = this.#queue.then(
      () =>
        new Promise<Hash>((resolve) => {
          this.sent.push(tx);
          const hash = `0x${String(this.sent.length).padStart(64, '0')}` as Hash;
          this.#answers.push(() => resolve(hash));
        }),
    );
    this.#queue = run;
    return run.finally(() => (this.queued -= 1));
  }

  /** Answers the send on the wire, letting the next one go. */
  async answer(): Promise<void> {
    await until(() => this.#answers.length > 0);
    this.#answers.shift()!();
    await tick();
  }
}

const tick = () => new Promise((resolve) => setImmediate(resolve));
async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 2_000;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
  if (!condition()) throw new Error('condition not met');
}

function batcherOver(lane: HandLane | HandLane[], policy: Partial<BatchPolicy>) {
  const lanes = Array.isArray(lane) ? lane : [lane];
  // The real pool's choice, without its turn-taking: the least busy.
  const pickLane = () => [...lanes].sort((a, b) => a.queued - b.queued)[0];
  const pool = { lanes, pickLane, whenMined: () => null } as unknown as RelayerPool;
  return new SettlementBatcher(pool, { maxCalls: 64, waitMs: 60_000, maxGas: 12_000_000n, idle: 'send', ...policy });
}

const call = (i: number): RelayerTx => ({ to: `0x${'a'.repeat(40)}`, data: `0x${i.toString(16).padStart(8, '0')}` as Hex, gas: 100_000n });

describe('SettlementBatcher scheduling', () => {
  it("idle 'send': a call finding the lane idle leaves at once; calls arriving while it is sent leave together as soon as the lane is free", async () => {
    const lane = new HandLane();
    const batcher = batcherOver(lane, {});
    const first = batcher.send(call(0), { payer: '0x01' });
    await until(() => lane.sent.length === 1);
    expect(lane.sent[0]!.data).toBe(call(0).data); // a plain transaction, no waiting for company

    const rest = [1, 2, 3].map((i) => batcher.send(call(i), { payer: `0x0${i + 1}` }));
    await tick();
    expect(lane.sent).toHaveLength(1); // held: the lane is busy
    await lane.answer();
    await until(() => lane.sent.length === 2);
    expect(lane.sent[1]!.to).toBe(MULTICALL3_ADDRESS); // the three left as one batch, without waiting 60 s
    await lane.answer();
    const hashes = await Promise.all([first, ...rest]);
    expect(new Set(hashes.slice(1)).size).toBe(1);
    expect(hashes[0]).not.toBe(hashes[1]);
  });

  it("idle 'send': a call finding the lane not sending but with a transaction unmined waits for company, up to waitMs", async () => {
    const lane = new HandLane();
    lane.unmined = 1;
    const batcher = batcherOver(lane, { waitMs: 50 });
    const started = Date.now();
    const sending = [0, 1].map((i) => batcher.send(call(i), { payer: `0x0${i + 1}` }));
    await tick();
    expect(lane.sent).toHaveLength(0);
    await until(() => lane.sent.length === 1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect(lane.sent[0]!.to).toBe(MULTICALL3_ADDRESS);
    await lane.answer();
    expect(new Set(await Promise.all(sending)).size).toBe(1);
  });

  it("idle 'wait': even a call finding the lane idle waits the window for company", async () => {
    const lane = new HandLane();
    const batcher = batcherOver(lane, { idle: 'wait', waitMs: 50 });
    const sending = [0, 1].map((i) => batcher.send(call(i), { payer: `0x0${i + 1}` }));
    await tick();
    expect(lane.sent).toHaveLength(0);
    await until(() => lane.sent.length === 1);
    expect(lane.sent[0]!.to).toBe(MULTICALL3_ADDRESS);
    await lane.answer();
    expect(new Set(await Promise.all(sending)).size).toBe(1);
  });

  it("idle 'send' with two lanes: while one lane is busy, new payers' calls fill one batch rather than leave alone on the idle lane", async () => {
    const lanes = [new HandLane(), new HandLane()];
    const batcher = batcherOver(lanes, { waitMs: 50 });
    // The whole pool is idle: the first call leaves at once.
    const sending = [batcher.send(call(0), { payer: '0x01' })];
    await until(() => lanes[0]!.sent.length === 1);
    // The second lane is idle, the pool is not: the next three wait for company together, then leave as one batch
    // on the least busy lane, without waiting for the first lane.
    const started = Date.now();
    sending.push(...[1, 2, 3].map((i) => batcher.send(call(i), { payer: `0x0${i + 1}` })));
    await tick();
    expect(lanes[1]!.sent).toHaveLength(0);
    await until(() => lanes[1]!.sent.length === 1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect(lanes[1]!.sent[0]!.to).toBe(MULTICALL3_ADDRESS);
    expect(lanes[0]!.sent).toHaveLength(1);
    await lanes[1]!.answer();
    await lanes[0]!.answer();
    const hashes = await Promise.all(sending);
    expect(new Set(hashes.slice(1)).size).toBe(1);
  });

  it('a new payer does not join an open batch on a lane with sends waiting behind the one on the wire (a slow node)', async () => {
    const lanes = [new HandLane(), new HandLane()];
    const batcher = batcherOver(lanes, { waitMs: 50 });
    // Payer 0x01 holds lane 0: one send on the wire, one waiting behind it, and a batch open there.
    const sending = [batcher.send(call(0), { payer: '0x01' })];
    await until(() => lanes[0]!.sent.length === 1);
    sending.push(batcher.send(call(1), { payer: '0x01', alone: true }), batcher.send(call(2), { payer: '0x01' }));
    await tick();
    expect(lanes[0]!.queued).toBe(2);
    // A new payer goes to the other lane rather than wait behind lane 0's queue.
    sending.push(batcher.send(call(3), { payer: '0x02' }));
    await until(() => lanes[1]!.sent.length === 1);
    expect(lanes[1]!.sent[0]!.data).toBe(call(3).data);
    for (let i = 0; i < 3; i += 1) await lanes[0]!.answer();
    await lanes[1]!.answer();
    await Promise.all(sending);
    expect(lanes[0]!.sent.map((tx) => tx.data)).toEqual([call(0).data, call(1).data, call(2).data]);
  });

  it("a new payer's call that must go alone takes a lane without an open batch, which keeps waiting for company", async () => {
    const lanes = [new HandLane(), new HandLane()];
    const batcher = batcherOver(lanes, { waitMs: 50 });
    const sending = [batcher.send(call(0), { payer: '0x01' })];
    await until(() => lanes[0]!.sent.length === 1);
    // A batch opens on lane 1 (the least busy); then a contract payer's call must go alone.
    sending.push(batcher.send(call(1), { payer: '0x02' }), batcher.send(call(2), { payer: '0x03', alone: true }));
    await tick();
    expect(lanes[1]!.sent).toHaveLength(0); // the batch on lane 1 was not sent early
    sending.push(batcher.send(call(3), { payer: '0x04' }));
    await until(() => lanes[1]!.sent.length === 1);
    expect(lanes[1]!.sent[0]!.to).toBe(MULTICALL3_ADDRESS); // 0x02 and 0x04 together
    await lanes[0]!.answer();
    await lanes[0]!.answer();
    await lanes[1]!.answer();
    await Promise.all(sending);
    expect(lanes[0]!.sent.map((tx) => tx.data)).toEqual([call(0).data, call(2).data]);
  });

  it("a payer's call that must go alone never overtakes that payer's earlier call waiting in a batch", async () => {
    const lane = new HandLane();
    const batcher = batcherOver(lane, {});
    const sending = [batcher.send(call(0), { payer: '0x01' })];
    await until(() => lane.sent.length === 1);
    // 0x02's first call waits in a batch behind the lane's send; its second must go alone (say, an RPC read failed).
    sending.push(batcher.send(call(1), { payer: '0x02' }), batcher.send(call(2), { payer: '0x02', alone: true }));
    for (let i = 0; i < 3; i += 1) await lane.answer();
    await Promise.all(sending);
    expect(lane.sent.map((tx) => tx.data)).toEqual([call(0).data, call(1).data, call(2).data]);
  });

  it('a full batch leaves at maxCalls even while the lane is busy', async () => {
    const lane = new HandLane();
    const batcher = batcherOver(lane, { maxCalls: 2 });
    const sending = [0, 1, 2].map((i) => batcher.send(call(i), { payer: `0x0${i + 1}` }));
    await until(() => lane.sent.length === 1);
    await lane.answer();
    await until(() => lane.sent.length === 2);
    await lane.answer();
    await Promise.all(sending);
    expect(lane.sent.map((tx) => tx.to)).toEqual([call(0).to, MULTICALL3_ADDRESS]);
  });
});
