import { ApiError } from '../../platform/http/errors.js';

// Agentic trading answers in the envelope family; `data.reason` names the condition.
const fail = (status: number, reason: string, message: string, extra?: Record<string, unknown>) => new ApiError(status, reason, message, { reason, ...extra });

export const tradingErrors = {
  strategyNotFound: () => fail(404, 'strategy_not_found', 'No such strategy visible to this user'),
  versionNotFound: () => fail(404, 'strategy_version_not_found', 'No such strategy version visible to this user'),
  accountNotFound: () => fail(404, 'account_not_found', 'No such trading account for this user'),
  runtimeNotFound: () => fail(404, 'runtime_not_found', 'No such runtime for this user'),
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
  idempotencyKeyReused: (runtimeId: string) =>
    fail(409, 'idempotency_key_reused', 'This idempotencyKey created a runtime with another definition', { runtimeId }),
  illegalTransition: (status: string, requested: string) =>
    fail(409, 'invalid_status_transition', `A ${status} runtime cannot move to ${requested}`, { status, requested }),
  accessPriceNotAccepted: (accessPriceUsd: string) =>
    fail(409, 'access_price_not_accepted', `This strategy's access costs ${accessPriceUsd} USD, charged to the account at activation: send maxAccessPriceUsd of at least that to accept it`, { accessPriceUsd }),
  notActive: (status: string) => fail(409, 'runtime_not_active', `Only an active runtime runs (this one is ${status})`, { status }),
  notFlattenable: (status: string) => fail(409, 'runtime_not_flattenable', `Only an active, paused or needs_review runtime can be flattened (this one is ${status})`, { status }),
  orderPlacing: () => fail(409, 'order_placing', "An order of this runtime is being placed at the venue by another run; try again once it is filled"),
  executionFailed: (message: string) => fail(503, 'execution_failed', `The run failed and is recorded on its execution; try again: ${message}`),
};
