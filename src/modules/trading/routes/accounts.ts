// Routes of trading accounts: list, create (an agent wallet), the model-provider keys, the account-wide limit,
// the kill switch, and the account's metered charges.
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { envelope } from '../../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../../platform/http/schemas.js';
import type { ZodApp } from '../../module.js';
import type { Catalog } from '../catalog.js';
import type { ChargeStore } from '../metering/charge-store.js';
import { accountIdParams, accountLimitsBody, accountSchema, chargeSchema, chargesQuery, createAccountBody, killSwitchBody, providerKeySchema, setProviderBody } from '../schemas/accounts.js';
import { listQuery } from '../schemas/common.js';
import type { AgentDeciders } from '../strategies/agent-decider.js';
import { chargeView } from '../views.js';
import { BASE, COMMON, pageOf, userOf } from './common.js';

export function registerAccountRoutes(app: ZodApp, ctx: AppContext, parts: { catalog: Catalog; chargeStore: ChargeStore; agents: AgentDeciders }): void {
  const { catalog, chargeStore, agents } = parts;
  const onRequest = ctx.auth.guard(['identity']);

  app.get(
    `${BASE}/accounts`,
    { onRequest, schema: { ...COMMON, summary: 'Your trading accounts, newest first', querystring: listQuery, response: { 200: envelopeSchema(z.array(accountSchema)), ...errors(400, 401) } } },
    async (request) => envelope(await catalog.listAccounts(userOf(request), pageOf(request.query))),
  );
  app.post(
    `${BASE}/accounts/agent-wallets`,
    { onRequest, config: { audit: { action: 'trading.account.create' } }, schema: { ...COMMON, summary: 'A trading account with a new agent wallet (Wallet API provider)', body: createAccountBody, response: { 201: envelopeSchema(accountSchema), ...errors(400, 401) } } },
    async (request, reply) => reply.code(201).send(envelope(await catalog.createAccount(userOf(request), request.body.name))),
  );
  app.put(
    `${BASE}/accounts/:accountId/providers`,
    {
      onRequest,
      config: { audit: { action: 'trading.provider-key.set', target: ({ params }) => params.accountId } },
      schema: {
        ...COMMON,
        summary: "Set the account's key for a model provider (its llm_agent runtimes and backtests call the model with it); answered masked",
        params: accountIdParams,
        body: setProviderBody,
        response: { 200: envelopeSchema(providerKeySchema), ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      await catalog.account(userOf(request), request.params.accountId);
      return envelope(await agents.setKey(request.params.accountId, request.body.provider, request.body.apiKey));
    },
  );
  app.get(
    `${BASE}/accounts/:accountId/providers`,
    {
      onRequest,
      schema: { ...COMMON, summary: "The account's model-provider keys, masked", params: accountIdParams, response: { 200: envelopeSchema(z.array(providerKeySchema)), ...errors(400, 401, 404) } },
    },
    async (request) => {
      await catalog.account(userOf(request), request.params.accountId);
      return envelope(await agents.keys(request.params.accountId));
    },
  );
  app.put(
    `${BASE}/accounts/:accountId/limits`,
    {
      onRequest,
      config: { audit: { action: 'trading.limits.set', target: ({ params }) => params.accountId } },
      schema: {
        ...COMMON,
        summary: "Set the account-wide limit across its runtimes (extension): orders that add exposure past it are blocked",
        params: accountIdParams,
        body: accountLimitsBody,
        response: { 200: envelopeSchema(accountSchema), ...errors(400, 401, 404) },
      },
    },
    async (request) => envelope(await catalog.setLimits(userOf(request), request.params.accountId, request.body)),
  );
  app.put(
    `${BASE}/accounts/:accountId/kill-switch`,
    {
      onRequest,
      config: { audit: { action: 'trading.kill-switch.set', target: ({ params }) => params.accountId } },
      schema: { ...COMMON, summary: "Set the account's kill switch for all its runtimes (extension)", params: accountIdParams, body: killSwitchBody, response: { 200: envelopeSchema(accountSchema), ...errors(400, 401, 404) } },
    },
    async (request) => envelope(await catalog.setKillSwitch(userOf(request), request.params.accountId, request.body.mode)),
  );
  app.get(
    `${BASE}/accounts/:accountId/charges`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: "Metered payments made by the account's agent wallet, newest first (extension)",
        params: accountIdParams,
        querystring: chargesQuery,
        response: { 200: envelopeSchema(z.array(chargeSchema)), ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const account = await catalog.account(userOf(request), request.params.accountId);
      return envelope((await chargeStore.ofAccount(account.id, request.query.limit, request.query.before ?? null)).map(chargeView));
    },
  );
}
