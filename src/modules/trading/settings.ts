import { z } from 'zod';
import { address, basisPoints, defineSettings, optionalString, optionalUrl, positiveInt, trimSlash, usdPrice, type EnvOf } from '../../platform/settings.js';

export interface TradingConfig {
  /**
   * Trading's optional x402 metering (docs/trading.md#payment-metering), paid by each account's agent
   * wallet. A price unset or 0 is off (the default for all); payTo: TRADING_METERING_PAY_TO, else on the
   * devchain a receiver key in the data dir.
   */
  trading: {
    metering: {
      payTo: string | null;
      pricesUsd: { activation: string | null; execution: string | null; marketData: string | null };
      /** A settling charge younger than this belongs to a live attempt; the reconciler leaves it alone. */
      reconcileAfterSeconds: number;
    };
    /** An llm_agent tick's model call gives up after this (the tick then places nothing, recorded `late`). */
    modelTimeoutMs: number;
    /** A runtime still provisioning (schedule or wallet not ready) this long after creation fails. */
    provisioningTimeoutSeconds: number;
    /** Where orders go: the paper venue, or an exchange through ccxt (docs/trading.md#live-venues-through-ccxt). */
    venue:
      | { kind: 'paper' }
      | { kind: 'ccxt'; exchange: string; apiKey: string; secret: string; sandbox: boolean; apiUrl: string | null; symbols: Record<string, string>; timeoutMs: number };
    /** A live venue's price reported longer ago than this is stale: the tick is skipped (docs/trading.md#live-venues-trade-on-their-own-prices). */
    maxPriceAgeSeconds: number;
    /** How far a live venue's quote may be from the decided price, and the room left for the fill when limits are re-checked at it, in basis points. */
    maxSlippageBps: number;
    /** How the paper venue (and every backtest) fills: fees and slippage in basis points, and rules by symbol (decimal text). */
    paper: { makerFeeBps: number; takerFeeBps: number; slippageBps: number; markets: Record<string, { lotSize: string; tickSize: string; minNotionalUsd: string }> };
  };
}

const decimalText = '\\d{1,12}(\\.\\d{1,18})?';

const env = {
  TRADING_METERING_PAY_TO: address,
  TRADING_PRICE_ACTIVATION_USD: usdPrice,
  TRADING_PRICE_EXECUTION_USD: usdPrice,
  TRADING_PRICE_MARKET_DATA_USD: usdPrice,
  TRADING_CHARGE_RECONCILE_AFTER_SECONDS: positiveInt(60),
  TRADING_MODEL_TIMEOUT_MS: positiveInt(20_000),
  TRADING_PROVISIONING_TIMEOUT_SECONDS: positiveInt(600),
  TRADING_VENUE: z.enum(['paper', 'ccxt']).default('paper'),
  TRADING_CCXT_EXCHANGE: optionalString,
  TRADING_CCXT_API_KEY: optionalString,
  TRADING_CCXT_SECRET: optionalString,
  TRADING_CCXT_SANDBOX: z.enum(['true', 'false']).default('true'),
  TRADING_CCXT_API_URL: optionalUrl,
  TRADING_CCXT_SYMBOLS: z
    .string()
    .regex(/^([A-Z0-9]+(-[A-Z]+)?=[A-Z0-9]+\/[A-Z0-9]+)(,[A-Z0-9]+(-[A-Z]+)?=[A-Z0-9]+\/[A-Z0-9]+)*$/, 'must be SYMBOL=BASE/QUOTE pairs separated by commas, e.g. BTC-USD=BTC/USDT')
    .optional(),
  TRADING_VENUE_TIMEOUT_MS: positiveInt(15_000),
  TRADING_MAX_PRICE_AGE_SECONDS: positiveInt(30),
  TRADING_MAX_SLIPPAGE_BPS: basisPoints(50),
  TRADING_PAPER_MAKER_FEE_BPS: basisPoints(2),
  TRADING_PAPER_TAKER_FEE_BPS: basisPoints(10),
  TRADING_PAPER_SLIPPAGE_BPS: basisPoints(5),
  TRADING_PAPER_MARKETS: z
    .string()
    .regex(new RegExp(`^[A-Z0-9]+(-[A-Z]+)?=${decimalText}/${decimalText}/${decimalText}(,[A-Z0-9]+(-[A-Z]+)?=${decimalText}/${decimalText}/${decimalText})*$`), 'must be SYMBOL=lot/tick/minNotional triples separated by commas, e.g. BTC-USD=0.00001/0.01/5')
    .refine((spec) => spec.split(',').every((pair) => pair.split('=')[1]!.split('/').slice(0, 2).every((step) => Number(step) > 0)), 'lot and tick sizes must be above zero')
    .optional(),
};

/** Trading: metering prices, timeouts, the venue orders go to, and how the paper venue fills. */
export const tradingSettings = defineSettings({
  env,
  load: (e): TradingConfig => ({
    trading: {
      metering: {
        payTo: e.TRADING_METERING_PAY_TO ?? null,
        pricesUsd: { activation: e.TRADING_PRICE_ACTIVATION_USD ?? null, execution: e.TRADING_PRICE_EXECUTION_USD ?? null, marketData: e.TRADING_PRICE_MARKET_DATA_USD ?? null },
        reconcileAfterSeconds: e.TRADING_CHARGE_RECONCILE_AFTER_SECONDS,
      },
      modelTimeoutMs: e.TRADING_MODEL_TIMEOUT_MS,
      provisioningTimeoutSeconds: e.TRADING_PROVISIONING_TIMEOUT_SECONDS,
      venue: venue(e),
      maxPriceAgeSeconds: e.TRADING_MAX_PRICE_AGE_SECONDS,
      maxSlippageBps: e.TRADING_MAX_SLIPPAGE_BPS,
      paper: {
        makerFeeBps: e.TRADING_PAPER_MAKER_FEE_BPS,
        takerFeeBps: e.TRADING_PAPER_TAKER_FEE_BPS,
        slippageBps: e.TRADING_PAPER_SLIPPAGE_BPS,
        markets: Object.fromEntries(
          (e.TRADING_PAPER_MARKETS ?? '').split(',').filter(Boolean).map((pair) => {
            const [symbol, rules] = pair.split('=') as [string, string];
            const [lotSize, tickSize, minNotionalUsd] = rules.split('/') as [string, string, string];
            return [symbol, { lotSize, tickSize, minNotionalUsd }];
          }),
        ),
      },
    },
  }),
  /** A ccxt venue needs its exchange and its keys. */
  problems: (e) =>
    e.TRADING_VENUE !== 'ccxt'
      ? []
      : (['TRADING_CCXT_EXCHANGE', 'TRADING_CCXT_API_KEY', 'TRADING_CCXT_SECRET'] as const).filter((name) => !e[name]).map((name) => `${name}: required with TRADING_VENUE=ccxt`),
});

function venue(e: EnvOf<typeof env>): TradingConfig['trading']['venue'] {
  if (e.TRADING_VENUE !== 'ccxt') return { kind: 'paper' };
  return {
    kind: 'ccxt',
    exchange: e.TRADING_CCXT_EXCHANGE!,
    apiKey: e.TRADING_CCXT_API_KEY!,
    secret: e.TRADING_CCXT_SECRET!,
    sandbox: e.TRADING_CCXT_SANDBOX === 'true',
    apiUrl: trimSlash(e.TRADING_CCXT_API_URL) ?? null,
    symbols: Object.fromEntries((e.TRADING_CCXT_SYMBOLS ?? '').split(',').filter(Boolean).map((pair) => pair.split('=') as [string, string])),
    timeoutMs: e.TRADING_VENUE_TIMEOUT_MS,
  };
}
