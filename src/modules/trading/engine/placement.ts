// A live venue's claimed order placed (LivePlacement.place): the venue asked first for a claim that may be out,
// resting protective orders cancelled before an order against the position, the last look at the venue's quote
// (quote-check.ts), then the venue call, and its fill, no-fill or rejection committed over the claimed book.
import type { AppContext } from '../../../context.js';
import type { ExecutionRow, PlacingExecution, RuntimeStore, TickState } from '../runtimes/runtime-store.js';
import { cancelRestingFor } from '../venues/protective-orders.js';
import { checkAtQuote, type DecidedRisk } from '../venues/quote-check.js';
import { OrderRejected, OrderUnfilled, type Venue } from '../venues/venue.js';
import type { Fill } from './book.js';
import { filled, requestOf, type OrderSummary } from './engine.js';

/**
 * How long one caller holds a claimed order's placement at the venue; a venue adapter's call must time out
 * well within it. A caller that died holding it delays the order's retry by this much, never doubles it.
 */
export const PLACEMENT_LEASE_MS = 60_000;

/** Places claimed orders at the live venue for the tick runner (ticks.ts), which holds each one's lease. */
export class LivePlacement {
  constructor(
    private readonly ctx: AppContext,
    private readonly runtimes: RuntimeStore,
    private readonly venue: Venue,
  ) {}

  /**
   * Places a claimed order at the live venue, its execution id as the client order id, and commits its
   * fill, or its rejection (the runtime goes to review); null when another worker committed it first. A
   * claim that is not `fresh` may be out already: the venue is asked for it before it is placed again.
   */
  async place(state: TickState, placing: PlacingExecution, attempt: number, fresh: boolean, lease: Date): Promise<ExecutionRow | null | 'lease_lost'> {
    const { venue } = this;
    const order = placing.order as OrderSummary;
    const at = this.ctx.clock.now();
    // Still ours, and a full lease ahead of the venue call: renewed by the value this caller holds it by.
    if (!(await this.runtimes.renewPlacement(placing.id, lease, PLACEMENT_LEASE_MS))) return 'lease_lost';
    let fill: Fill;
    let sent = order;
    let book = state.book;
    const noFill = { executionId: placing.id, runtimeId: state.id, bookVersion: state.bookVersion, at };
    try {
      const known = fresh ? null : await venue.findOrder({ clientOrderId: placing.id, symbol: order.symbol });
      // An order against the position goes only once its resting protective orders are cancelled (the venue holds
      // the asset for them, and a stop filling beside it would close twice); one that filled first closed it already.
      const held = Number(book.positions[order.symbol]?.qty ?? 0);
      if (!known && held !== 0 && (order.side === 'sell') === held > 0) {
        const cancelled = await cancelRestingFor(book, order.symbol, venue);
        if ('filledFirst' in cancelled) {
          const message = `not sent: the resting ${cancelled.filledFirst.kind} ${cancelled.filledFirst.clientOrderId} filled at the venue first; the next tick books its fill`;
          return this.runtimes.commitNoFill({ ...noFill, status: 'completed', order: { ...sent, status: 'unfilled' }, error: { code: 'resting_order_filled', message }, review: null });
        }
        book = cancelled.book;
      }
      if (!known && venue.prices) {
        // The last look before the venue call: the order valued at the venue's quote now, plus the allowance (quote-check.ts).
        const quote = await venue.prices.quote(order.symbol);
        sent = { ...order, quote } as OrderSummary;
        const refusal = checkAtQuote({
          order: { ...order, referencePrice: referencePriceOf(placing) },
          quote,
          book: state.book,
          limits: { fundLimitUsd: state.fundLimitUsd, maxLeverage: state.maxLeverage },
          decided: (placing.riskAssessment as DecidedRisk | null) ?? null,
          maxSlippageBps: this.ctx.config.trading.maxSlippageBps,
        });
        if (refusal) return this.runtimes.commitNoFill({ ...noFill, status: 'blocked', order: { ...sent, status: 'blocked' }, error: refusal, review: null });
      }
      fill = known ?? (await venue.place({ ...requestOf({ ...order, referencePrice: referencePriceOf(placing) }, placing.scheduledAt), clientOrderId: placing.id }));
    } catch (error) {
      if (error instanceof OrderUnfilled) return this.runtimes.commitNoFill({ ...noFill, status: 'completed', order: { ...sent, status: 'unfilled' }, error: null, review: null });
      if (!(error instanceof OrderRejected)) throw error;
      return this.runtimes.commitNoFill({
        ...noFill,
        status: 'rejected',
        order: { ...sent, status: 'rejected' },
        error: { code: 'order_rejected', message: error.message.slice(0, 1000) },
        review: `order rejected by ${venue.name}: ${error.message.slice(0, 200)}`,
      });
    }
    const after = filled(book, fill, sent, placing.scheduledAt);
    return this.runtimes.commitFill({ executionId: placing.id, runtimeId: state.id, bookVersion: state.bookVersion, book: after.book, order: after.order, attempt, at });
  }
}

/** The feed's price the order was decided at (older claims carry it only in their decision's signals). */
function referencePriceOf(placing: PlacingExecution): number {
  const order = placing.order as OrderSummary;
  if (order.referencePrice !== undefined) return order.referencePrice;
  const signals = (placing.decision as { signals: { symbol: string; price: number }[] }).signals;
  return signals.find((s) => s.symbol === order.symbol)!.price;
}
