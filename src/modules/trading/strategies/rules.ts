// quant_signal rules: a declarative strategy over indicators computed by trading-signals (SMA, EMA, RSI, MACD,
// Bollinger bands, ATR) on closed candles. Entry and exit conditions per side, position sizing, and protective
// levels (stop-loss, take-profit, trailing stop) given to each position it opens. docs/trading.md#rules.
import { ATR, BollingerBands, EMA, MACD, RSI, SMA } from 'trading-signals';
import { z } from 'zod';
import type { Candle } from '../data/market-data.js';

const period = z.number().int().min(2).max(200);
const indicator = z.discriminatedUnion('type', [
  z.object({ type: z.literal('sma'), period }).strict(),
  z.object({ type: z.literal('ema'), period }).strict(),
  z.object({ type: z.literal('rsi'), period }).strict(),
  z.object({ type: z.literal('atr'), period }).strict(),
  z.object({ type: z.literal('bollinger'), period, deviations: z.number().positive().max(10).default(2) }).strict(),
  z.object({ type: z.literal('macd'), fast: period, slow: period, signal: period }).strict(),
]);
export type Indicator = z.infer<typeof indicator>;

/** `price`, `close`, an indicator's name, a field of one (`macd.histogram`, `bands.upper`), or a number. */
const operand = z.union([z.number(), z.string().regex(/^[a-z][a-z0-9_]{0,30}(\.(macd|signal|histogram|upper|middle|lower))?$/, 'price, close, an indicator name or name.field')]);
const condition = z.object({ left: operand, op: z.enum(['>', '<', '>=', '<=', 'crosses_above', 'crosses_below']), right: operand }).strict();
const conditions = z.array(condition).max(10);
const percent = z.number().positive().max(100);

export const quantRules = z
  .object({
    indicators: z.record(z.string().regex(/^[a-z][a-z0-9_]{0,30}$/), indicator).refine((all) => Object.keys(all).length <= 10, 'at most 10 indicators'),
    /** A side is entered when all of its conditions hold (a side without conditions is never entered). */
    entry: z.object({ long: conditions.default([]), short: conditions.default([]) }).strict(),
    /** A position is closed when all of its side's exit conditions hold (none: only its protective levels close it). */
    exit: z.object({ long: conditions.default([]), short: conditions.default([]) }).strict().default({ long: [], short: [] }),
    /** Gross exposure per position as a multiple of equity, split over the universe (as `exposure=`). */
    sizing: z.object({ exposure: z.number().positive().max(10).default(1) }).strict().default({ exposure: 1 }),
    stopLossPercent: percent.optional(),
    takeProfitPercent: percent.optional(),
    trailingStopPercent: percent.optional(),
  })
  .strict()
  .superRefine((rules, ctx) => {
    const names = new Set(Object.keys(rules.indicators));
    const all = [...rules.entry.long, ...rules.entry.short, ...rules.exit.long, ...rules.exit.short];
    for (const c of all) {
      for (const o of [c.left, c.right]) {
        if (typeof o !== 'string' || o === 'price' || o === 'close') continue;
        const [name, field] = o.split('.') as [string, string | undefined];
        const def = rules.indicators[name];
        if (!names.has(name) || !def) ctx.addIssue({ code: 'custom', message: `${o}: no indicator named ${name}` });
        else if (field && !FIELDS[def.type].includes(field)) ctx.addIssue({ code: 'custom', message: `${o}: a ${def.type} has ${FIELDS[def.type].join(', ') || 'no fields'}` });
        else if (!field && FIELDS[def.type].length > 0) ctx.addIssue({ code: 'custom', message: `${o}: name one of the ${def.type}'s fields (${FIELDS[def.type].join(', ')})` });
      }
    }
  });
export type QuantRules = z.infer<typeof quantRules>;

const FIELDS: Record<Indicator['type'], string[]> = { sma: [], ema: [], rsi: [], atr: [], bollinger: ['upper', 'middle', 'lower'], macd: ['macd', 'signal', 'histogram'] };

/** Closed candles the rules read: the slowest indicator's warm-up, and one more for crossings. */
export function candlesNeeded(rules: QuantRules): number {
  return Math.max(2, ...Object.values(rules.indicators).map((i) => indicatorOf(i).getRequiredInputs())) + 1;
}

export interface RulesVerdict {
  /** What the position should be: entered long or short, closed (flat), or left as it is. */
  target: 'long' | 'short' | 'flat' | 'keep';
  /** Each indicator at the last closed candle (null while warming up), as recorded in the decision. */
  values: Record<string, number | Record<string, number> | null>;
  /** The conditions that decided, in words. */
  because: string[];
}

/** The rules over one symbol's closed candles (oldest first) and current price, given what is held. */
export function evaluateRules(rules: QuantRules, candles: Candle[], price: number, held: 'long' | 'short' | 'flat'): RulesVerdict {
  const now = valuesAt(rules, candles, price);
  const before = valuesAt(rules, candles.slice(0, -1), candles.at(-2)?.close ?? price);
  const holds = (list: QuantRules['entry']['long']) => list.length > 0 && list.every((c) => test(c, now, before));
  const words = (list: QuantRules['entry']['long']) => list.map((c) => `${c.left} ${c.op} ${c.right}`);
  const values = Object.fromEntries(Object.keys(rules.indicators).map((name) => [name, now.indicators[name] ?? null]));
  if (held === 'long' && holds(rules.exit.long)) return { target: 'flat', values, because: words(rules.exit.long) };
  if (held === 'short' && holds(rules.exit.short)) return { target: 'flat', values, because: words(rules.exit.short) };
  if (held === 'flat' && holds(rules.entry.long)) return { target: 'long', values, because: words(rules.entry.long) };
  if (held === 'flat' && holds(rules.entry.short)) return { target: 'short', values, because: words(rules.entry.short) };
  return { target: 'keep', values, because: [] };
}

interface Snapshot {
  price: number;
  close: number;
  indicators: Record<string, number | Record<string, number> | null>;
}

function valuesAt(rules: QuantRules, candles: Candle[], price: number): Snapshot {
  return { price, close: candles.at(-1)?.close ?? price, indicators: indicatorValues(rules.indicators, candles) };
}

/** Each named indicator over the candles once it has warmed up (null before), computed by trading-signals. */
export function indicatorValues(indicators: Record<string, Indicator>, candles: readonly Candle[]): Snapshot['indicators'] {
  const values: Snapshot['indicators'] = {};
  for (const [name, def] of Object.entries(indicators)) {
    const series = indicatorOf(def);
    for (const c of candles) {
      if (series instanceof ATR) series.add({ high: c.high, low: c.low, close: c.close });
      else series.add(c.close);
    }
    const result = series.isStable ? series.getResult() : null;
    values[name] = result === null || result === undefined ? null : typeof result === 'number' ? result : { ...(result as Record<string, number>) };
  }
  return values;
}

function test(c: QuantRules['entry']['long'][number], now: Snapshot, before: Snapshot): boolean {
  const [l, r] = [read(c.left, now), read(c.right, now)];
  if (l === null || r === null) return false; // an indicator still warming up holds nothing
  switch (c.op) {
    case '>':
      return l > r;
    case '<':
      return l < r;
    case '>=':
      return l >= r;
    case '<=':
      return l <= r;
    default: {
      const [pl, pr] = [read(c.left, before), read(c.right, before)];
      if (pl === null || pr === null) return false;
      return c.op === 'crosses_above' ? pl <= pr && l > r : pl >= pr && l < r;
    }
  }
}

function read(o: string | number, at: Snapshot): number | null {
  if (typeof o === 'number') return o;
  if (o === 'price') return at.price;
  if (o === 'close') return at.close;
  const [name, field] = o.split('.') as [string, string | undefined];
  const value = at.indicators[name];
  if (value === null || value === undefined) return null;
  return typeof value === 'number' ? value : (value[field!] ?? null);
}

function indicatorOf(def: Indicator): SMA | EMA | RSI | ATR | BollingerBands | MACD {
  switch (def.type) {
    case 'sma':
      return new SMA(def.period);
    case 'ema':
      return new EMA(def.period);
    case 'rsi':
      return new RSI(def.period);
    case 'atr':
      return new ATR(def.period);
    case 'bollinger':
      return new BollingerBands(def.period, def.deviations);
    case 'macd':
      return new MACD(new EMA(def.fast), new EMA(def.slow), new EMA(def.signal));
  }
}
