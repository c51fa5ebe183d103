import { ApiError } from '../../platform/http/errors.js';

// Agentic trading answers in the envelope family; `data.reason` names the condition.
const fail = (status: number, reason: string, message: string, extra?: Record<string, unknown>) => new ApiError(status, reason, message, { reason, ...extra });

export const tradingErrors = {
  strategyNotFound: () => fail(404, 'strategy_not_found', 'No such strategy visible to this user'),
  versionNotFound: () => fail(404, 'strategy_version_not_found', 'No such strategy version visible to this user'),
  accountNotFound: () => fail(404, 'account_not_found', 'No such trading account for this user'),
  runtimeNotFound: () => fail(404, 'runtime_not_found', 'No such runtime for this user'),
  backtestJobNotFound: () => fail(404, 'backtest_job_not_found', 'No such backtest job for this user'),
  backtestJobState: (status: string, requested: string) => fail(409, 'invalid_job_transition', `A ${status} backtest job cannot be ${requested}`, { status, requested }),
  invalidDefinition: (message: string) => fail(400, 'invalid_strategy_definition', message),
  invalidCron: (message: string) => fail(400, 'invalid_cron_expression', message),
  invalidWindow: (message: string) => fail(400, 'invalid_backtest_window', message),
  invalidBacktest: (message: string) => fail(400, 'invalid_backtest', message),
  marketDataGap: (gap: { source: string; symbol: string; interval: string; needFrom: string; needTo: string; firstMissing: string; missing: number }) =>
    fail(
      422,
      'market_data_gap',
      `The ${gap.source} data lacks ${gap.missing} ${gap.symbol} ${gap.interval} candle(s) this backtest reads (${gap.needFrom} to ${gap.needTo}), the first at ${gap.firstMissing}: import them or choose a covered window (GET /agentic-trading/market-data)`,
      gap,
    ),
  dataSourceNotVenue: (venue: string, source: string) =>
    fail(
      409,
      'data_source_not_venue',
      `This deployment trades on ${venue}, a live venue: a runtime there decides on that venue's own prices, so its version's first data source must be \`venue\`, not ${source} (publish a version with dataSources: ["venue"]; ${source} data still serves its backtests)`,
      { venue, source },
    ),
  marketDataNotCurrent: (gap: { source: string; symbol: string; interval: string; needFrom?: string; needTo?: string; firstMissing?: string; missing?: number; detail?: string }) =>
    fail(
      409,
      'market_data_not_current',
      `The ${gap.source} data cannot serve a runtime now: ${gap.detail ?? (gap.needFrom ? `a tick now reads ${gap.symbol} ${gap.interval} candles from ${gap.needFrom} to ${gap.needTo}, and ${gap.missing} of them are missing, the first at ${gap.firstMissing}` : `it lacks ${gap.symbol} ${gap.interval} candles a tick now reads`)}. A runtime on imported data needs its candles imported as they close (tollgate trading import); backtest past windows instead`,
      gap,
    ),
  idempotencyKeyReused: (runtimeId: string) =>
    fail(409, 'idempotency_key_reused', 'This idempotencyKey created a runtime with another definition', { runtimeId }),
  illegalTransition: (status: string, requested: string) =>
    fail(409, 'invalid_status_transition', `A ${status} runtime cannot move to ${requested}`, { status, requested }),
  accessPriceNotAccepted: (accessPriceUsd: string) =>
    fail(409, 'access_price_not_accepted', `This strategy's access costs ${accessPriceUsd} USD, charged once to the account (at a runtime's activation or its first backtest): send maxAccessPriceUsd of at least that to accept it`, { accessPriceUsd }),
  accessPaymentRefused: (reason: string) =>
    fail(409, 'access_payment_refused', `The account's agent wallet could not pay this strategy's access (${reason}): fund its address with USDG and try again`, { paymentReason: reason }),
  accessPaymentPending: (reason: string) => fail(503, 'access_payment_pending', `The payment for this strategy's access is not settled yet (${reason}); try again shortly: it is never paid twice`, { paymentReason: reason }),
  notActive: (status: string) => fail(409, 'runtime_not_active', `Only an active runtime runs (this one is ${status})`, { status }),
  notFlattenable: (status: string) => fail(409, 'runtime_not_flattenable', `Only an active, paused or needs_review runtime can be flattened (this one is ${status})`, { status }),
  orderPlacing: () => fail(409, 'order_placing', "An order of this runtime is being placed at the venue by another run; try again once it is filled"),
  executionFailed: (message: string) => fail(503, 'execution_failed', `The run failed and is recorded on its execution; try again: ${message}`),
};
