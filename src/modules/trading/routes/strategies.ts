// Routes of strategies: list, create, read, publish a version, and the answered backtest of a version (its
// trade lists, optimisation and background jobs are routes/backtests.ts).
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { envelope } from '../../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../../platform/http/schemas.js';
import type { ZodApp } from '../../module.js';
import type { Backtester } from '../backtests/backtest.js';
import type { Catalog } from '../catalog.js';
import { backtestBody, backtestResult } from '../schemas/backtests.js';
import { listQuery } from '../schemas/common.js';
import { createStrategyBody, strategyIdParams, strategySchema, strategyVersionInput } from '../schemas/strategies.js';
import { BASE, COMMON, pageOf, userOf } from './common.js';

export function registerStrategyRoutes(app: ZodApp, ctx: AppContext, parts: { catalog: Catalog; backtester: Backtester }): void {
  const { catalog, backtester } = parts;
  const onRequest = ctx.auth.guard(['identity']);

  app.get(
    `${BASE}/strategies`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: 'Strategies you own and public ones, newest first, each with its latest version',
        description: "Another user's priced strategy shows its description and each version's summary; its definitions are null (only its owner reads them).",
        querystring: listQuery,
        response: { 200: envelopeSchema(z.array(strategySchema)), ...errors(400, 401) },
      },
    },
    async (request) => envelope(await catalog.listStrategies(userOf(request), pageOf(request.query))),
  );
  app.post(
    `${BASE}/strategies`,
    { onRequest, schema: { ...COMMON, summary: 'Create a strategy with its first version', body: createStrategyBody, response: { 201: envelopeSchema(strategySchema), ...errors(400, 401) } } },
    async (request, reply) => reply.code(201).send(envelope(await catalog.createStrategy(userOf(request), request.body))),
  );
  app.get(
    `${BASE}/strategies/:strategyId`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: 'A strategy with all its versions',
        description: "Another user's priced strategy answers its description and each version's summary, with every definition null: only its owner reads them.",
        params: strategyIdParams,
        response: { 200: envelopeSchema(strategySchema), ...errors(400, 401, 404) },
      },
    },
    async (request) => envelope(await catalog.getStrategy(userOf(request), request.params.strategyId)),
  );
  app.post(
    `${BASE}/strategies/:strategyId/versions`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: 'Publish a new version (owner only); runtimes keep the version they were launched with',
        params: strategyIdParams,
        body: strategyVersionInput,
        response: { 201: envelopeSchema(strategySchema), ...errors(400, 401, 404) },
      },
    },
    async (request, reply) => reply.code(201).send(envelope(await catalog.publish(userOf(request), request.params.strategyId, request.body))),
  );
  app.post(
    `${BASE}/strategies/:strategyId/backtest`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: 'Replay a version over the feed with the live code path (extension)',
        description:
          "Another user's priced strategy is replayed once the account named by accountId has paid its access (maxAccessPriceUsd at or above its price; once per account, shared with runtime activation), and its executions' decisions show what it did, not why. 409 access_price_not_accepted, access_payment_refused (the wallet could not pay); 503 access_payment_pending (try again).",
        params: strategyIdParams,
        body: backtestBody,
        response: { 200: envelopeSchema(backtestResult), ...errors(400, 401, 404, 409, 422, 503) },
      },
    },
    async (request, reply) => {
      // A replay (an llm_agent's model calls above all) stops when its client goes away.
      const gone = new AbortController();
      reply.raw.once('close', () => reply.raw.writableFinished || gone.abort());
      return envelope(await backtester.run(userOf(request), request.params.strategyId, request.body, gone.signal));
    },
  );
}
