import type { Metrics } from '../platform/metrics.js';
import type { Facilitator, FacilitatorObserver } from './facilitator/facilitator.js';
import { FacilitatorUnavailableError, SettlementUnknownError } from './server/errors.js';
import type { CallerFacilitatorClient } from './server/facilitator-clients.js';

// x402 metrics: what this process's facilitator answered (settlement outcomes, latency), how its relayer
// keys stand (gas, nonce gap), and how long paid endpoints wait on whichever facilitator they use.
// Reasons are the facilitator's reason codes: a bounded set.

/** The facilitator engine's answers: settlement outcomes by reason, verify and settle latency. */
export function facilitatorObserver(metrics: Metrics): FacilitatorObserver {
  const settlements = metrics.counter(
    'tollgate_facilitator_settlements_total',
    'Settle answers of this facilitator by outcome (settled, failed, pending, error) and failure reason',
    ['outcome', 'reason'],
  );
  const duration = metrics.histogram(
    'tollgate_facilitator_duration_seconds',
    'Time this facilitator took to answer verify and settle, by operation and outcome (ok, rejected, error)',
    ['operation', 'outcome'],
  );
  const gas = metrics.counter(
    'tollgate_relayer_gas_spent_total',
    "Gas our relayer's settlement transactions used, by the route that caused them (worker: a background loop, or a settle whose caller named no route) and outcome (settled, failed); a batch's gas is shared by its calls",
    ['route', 'outcome'],
  );
  return {
    gasSpent(used, outcome, route) {
      gas.inc({ route: route ?? 'worker', outcome }, Number(used));
    },
    answered(operation, answer, seconds) {
      duration.observe({ operation, outcome: answer === 'error' ? 'error' : answer.ok ? 'ok' : 'rejected' }, seconds);
      if (operation !== 'settle') return;
      if (answer === 'error') settlements.inc({ outcome: 'error', reason: '' });
      else if (answer.ok) settlements.inc({ outcome: 'settled', reason: '' });
      else settlements.inc({ outcome: answer.reason === 'settlement_pending' ? 'pending' : 'failed', reason: answer.reason ?? '' });
    },
  };
}

/** Each relayer key's gas balance and nonce gap (sent, not yet mined), read at scrape time. */
export function registerRelayerMetrics(metrics: Metrics, facilitator: Facilitator): void {
  let inFlight: ReturnType<Facilitator['relayerStatus']> | null = null;
  const status = () => (inFlight ??= facilitator.relayerStatus().finally(() => (inFlight = null)));
  metrics.gauge('tollgate_relayer_balance_wei', 'Gas balance of each relayer key, in wei', ['address'], async (set) => {
    for (const key of await status()) set({ address: key.address }, Number(key.balanceWei));
  });
  metrics.gauge('tollgate_relayer_float_wei', "The relayer keys' gas balances together, in wei", [], async (set) => set({}, Number(await facilitator.gasFloat.wei())));
  metrics.gauge('tollgate_relayer_gas_floor_wei', 'Below this float the public /settle and the relay stop (floor=public), then every settle (floor=own)', ['floor'], (set) => {
    set({ floor: 'public' }, Number(facilitator.gasFloat.floors.publicWei));
    set({ floor: 'own' }, Number(facilitator.gasFloat.floors.ownWei));
  });
  metrics.gauge('tollgate_relayer_nonce_gap', "Transactions each relayer key sent that are not mined yet (pending − latest nonce)", ['address'], async (set) => {
    for (const key of await status()) set({ address: key.address }, key.gap);
  });
}

/**
 * Paid endpoints' calls to their facilitator (this process's, ours over HTTP, or FACILITATOR_URL), by
 * operation and outcome: ok, rejected (a definitive no), unavailable (nothing happened), unknown (a settle
 * that may have happened).
 */
export function observedFacilitatorClient(client: CallerFacilitatorClient, metrics: Metrics, facilitator: 'local' | 'http'): CallerFacilitatorClient {
  const duration = facilitatorClientDuration(metrics);
  const timed = async <T>(operation: 'verify' | 'settle', call: Promise<T>, ok: (answer: T) => boolean): Promise<T> => {
    const end = duration.startTimer({ facilitator, operation });
    try {
      const answer = await call;
      end({ outcome: ok(answer) ? 'ok' : 'rejected' });
      return answer;
    } catch (error) {
      end({ outcome: error instanceof SettlementUnknownError ? 'unknown' : error instanceof FacilitatorUnavailableError ? 'unavailable' : 'error' });
      throw error;
    }
  };
  return {
    verify: (payload, requirements, caller) => timed('verify', client.verify(payload, requirements, caller), (answer) => answer.isValid),
    settle: (payload, requirements, caller) => timed('settle', client.settle(payload, requirements, caller), (answer) => answer.success),
    getSupported: () => client.getSupported(),
  };
}

/**
 * The paid endpoints' wait on their facilitator. Registered when the x402 wiring is built (the client itself is made
 * at the first paid call), so the series is in every scrape from the start: dashboards and alerts name it.
 */
export function facilitatorClientDuration(metrics: Metrics) {
  return metrics.histogram(
    'tollgate_facilitator_client_duration_seconds',
    'Time paid endpoints waited on their facilitator, by facilitator (local, http), operation and outcome',
    ['facilitator', 'operation', 'outcome'],
  );
}
