// Crash points: named steps of the paid flows where the crash-point suite kills the process
// (SIGKILL: no cleanup, no answer), to prove that restart + reconcile leaves no double charge and
// no lost payment. Inert unless TOLLGATE_CRASH_POINT names the step; never set it in production.
export const CRASH_POINTS = [
  // facilitator settle
  'settle.after-claim',
  'settle.after-broadcast',
  'settle.after-receipt',
  'settle.after-commit',
  // a settlement batch (several settles in one Multicall3 transaction): sent, no caller has recorded its hash;
  // every caller recorded it and waits for the receipt; the outcomes of the callers that resumed first are
  // final (one statement), no success answered, any later callers' outcomes not written
  'batch.after-broadcast',
  'batch.receipt-wait',
  'batch.after-some-rows',
  // any paid endpoint of ours (ping): the x402 resource-server flow
  'x402.after-verify',
  'x402.after-settle',
  // payment intents
  'intent.after-claim',
  'intent.after-settle',
  'intent.after-commit',
  // deposit sweeps: the sweep recorded, not yet signed or sent; settled, the outcome not recorded
  'sweep.after-record',
  'sweep.after-settle',
  // refunds: the refund recorded (its cents reserved), its wallet transfer not yet made; made, the outcome not recorded
  'refund.after-record',
  'refund.after-send',
  // image storage upload: the order claimed for a payment, not yet settled; settled, not yet recorded
  'storage.after-claim',
  'storage.after-settle',
  // relay broadcast: the idempotency record made, nothing sent; settled, the record not completed
  'relay.after-record',
  'relay.after-settle',
  // wallet pay-and-call: reserved (recorded) under the spend policy, not yet signed; signed, not yet sent;
  // the upstream answered, the row not final
  'pay-and-call.after-reserve',
  'pay-and-call.after-sign',
  'pay-and-call.after-upstream',
  // an agent's chat sold per token: the permit's turn recorded, not begun; the turn completed (its cost stored), not settled
  'agents.paid-turn.after-open',
  'agents.paid-turn.after-turn',
  // credit top-up: the authorization claimed, not yet settled; settled, not yet credited
  'credits.after-claim',
  'credits.after-settle',
] as const;

export type CrashPoint = (typeof CRASH_POINTS)[number];

const armed = process.env.TOLLGATE_CRASH_POINT;

export function crashPoint(name: CrashPoint): void {
  if (armed === name) process.kill(process.pid, 'SIGKILL');
}
