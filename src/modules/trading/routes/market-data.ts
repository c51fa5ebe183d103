// The market-data route: what this deployment's feeds hold (the embedded feed, and the imported candles' coverage).
import type { AppContext } from '../../../context.js';
import { envelope } from '../../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../../platform/http/schemas.js';
import type { ZodApp } from '../../module.js';
import type { CandleStore } from '../data/candle-store.js';
import { CANDLE_INTERVALS } from '../data/market-data.js';
import { marketDataSchema } from '../schemas/market-data.js';
import { BASE, COMMON } from './common.js';

export function registerMarketDataRoutes(app: ZodApp, ctx: AppContext, parts: { candles: CandleStore }): void {
  const { candles } = parts;
  const onRequest = ctx.auth.guard(['identity']);

  app.get(
    `${BASE}/market-data`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: 'The market data this deployment has: the embedded feed, and each imported symbol and interval with its covered ranges (extension)',
        response: { 200: envelopeSchema(marketDataSchema), ...errors(401) },
      },
    },
    async () => envelope({ embedded: { symbols: 'any symbol-shaped name (computed prices)', intervals: Object.keys(CANDLE_INTERVALS) }, imported: await candles.coverage() }),
  );
}
