import type { Candle } from '../data/market-data.js';
import { candlesNeeded, type QuantRules } from './rules.js';

/** A `quant_signal` version's definition (schemaVersion 1). */
export interface QuantSignalDefinition {
  instructions: string;
  universe: string[];
  dataSources: string[];
  candleInterval: string;
  /** Declarative rules (rules.ts); when given, the instructions' tokens are not read. */
  rules?: QuantRules;
}

/** Closed candles a tick of this definition reads per symbol. */
export const candlesRead = (definition: QuantSignalDefinition) => (definition.rules ? candlesNeeded(definition.rules) : signalParams(definition.instructions).slow);

/**
 * The signal's parameters, read from `key=value` tokens in the instructions; the rest of the text is
 * kept for readers (and covered by the version's hash) but does not move the evaluator.
 */
export interface SignalParams {
  /** Fast and slow simple moving averages of closes, in candles. */
  fast: number;
  slow: number;
  /** Target gross exposure as a multiple of equity when a signal is on, split evenly over the universe. */
  exposure: number;
  /** Whether a bearish signal goes short (otherwise flat). */
  short: boolean;
}

export const DEFAULT_PARAMS: SignalParams = { fast: 5, slow: 20, exposure: 1, short: false };

export class SignalParamsError extends Error {}

/** The parameters in `instructions`, validated; unknown keys are text like any other. */
export function signalParams(instructions: string): SignalParams {
  const params = { ...DEFAULT_PARAMS };
  for (const [, key, value] of instructions.matchAll(/\b(fast|slow|exposure|short)=([^\s,;]+)/g)) {
    if (key === 'short') {
      if (value !== 'true' && value !== 'false') throw new SignalParamsError('short= takes true or false');
      params.short = value === 'true';
      continue;
    }
    const n = Number(value);
    if (key === 'exposure') {
      if (!Number.isFinite(n) || n <= 0 || n > 10) throw new SignalParamsError('exposure= takes a number above 0 and at most 10');
      params.exposure = n;
    } else {
      if (!Number.isInteger(n) || n < 1 || n > 200) throw new SignalParamsError(`${key}= takes a whole number of candles from 1 to 200`);
      params[key as 'fast' | 'slow'] = n;
    }
  }
  if (params.fast >= params.slow) throw new SignalParamsError('fast= must be below slow=');
  return params;
}

export interface SymbolSignal {
  symbol: string;
  fastSma: number;
  slowSma: number;
  signal: 'long' | 'short' | 'flat';
  price: number;
}

const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

/** Momentum by moving-average cross over the candles' closes (`slow` candles, oldest first). */
export function signalOf(symbol: string, candles: Candle[], price: number, params: SignalParams): SymbolSignal {
  const closes = candles.map((c) => c.close);
  const fastSma = mean(closes.slice(-params.fast));
  const slowSma = mean(closes);
  const signal = fastSma > slowSma ? 'long' : fastSma < slowSma && params.short ? 'short' : 'flat';
  return { symbol, fastSma, slowSma, signal, price };
}
