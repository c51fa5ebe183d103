import type { Metrics } from '../../platform/metrics.js';

/**
 * Payment-intent outcomes by where they were decided: `pay` (the pay request's own settle), `reconcile`
 * (from the chain: the worker, the reconcile endpoint, `intents resolve`), `expiry` (the sweep, or a pay
 * that found its intent overdue) and `deposit` (transfers to its deposit address added up to its amount). Outcomes: `settled`, `failed` and `expired` (final), `reopened` (the
 * authorization cannot pay it and nothing moved for it: refused at settle, expired unused, or settled before
 * for another payment; pending again), `released` (the facilitator was unreachable before anything
 * was sent: pending again) and `unknown` (the settle's result is not known: left to reconciliation).
 * A move is counted by whoever made it, so summing over `path` counts each settled or failed intent once
 * (a reopen past the intent's lifetime leaves it expired: counted as `reopened`, not `expired`).
 */
export type IntentPath = 'pay' | 'reconcile' | 'expiry' | 'deposit';
export type IntentOutcome = 'settled' | 'failed' | 'expired' | 'reopened' | 'released' | 'unknown';
export type IntentOutcomes = (path: IntentPath, outcome: IntentOutcome, count?: number) => void;

export function intentOutcomes(metrics: Metrics): IntentOutcomes {
  const counter = metrics.counter('tollgate_intent_outcomes_total', 'Payment-intent outcomes by where they were decided (pay, reconcile, expiry)', ['path', 'outcome']);
  return (path, outcome, count = 1) => {
    if (count > 0) counter.inc({ path, outcome }, count);
  };
}

/** Counts nothing (a Reconciler built without metrics). */
export const noIntentOutcomes: IntentOutcomes = () => {};
