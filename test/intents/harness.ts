import type { LightMyRequestResponse } from 'fastify';
import { parseAbiItem, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { moduleFactories } from '../../src/modules/index.js';
import type { ModuleFactory } from '../../src/modules/module.js';
import { createIntentsModule, intentsModule, type IntentsModuleOptions } from '../../src/modules/intents/routes.js';
import type { Clock } from '../../src/platform/clock.js';
import { readPaymentRequired, signPayment } from '../../src/x402/client.js';
import type { PaymentRequired } from '@x402/core/types';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

// The whole service on a devchain (facilitator, indexer and intents worker in-process), with the
// intents module optionally built over wrapped payment ports for fault injection.

export interface PayAppOptions extends IntentsModuleOptions {
  env?: Record<string, string>;
  clock?: Clock;
}

export async function buildPayApp(options: PayAppOptions = {}): Promise<TestApp> {
  return buildTestApp({ factories: payFactories(options), clock: options.clock, env: { INDEXER_POLL_MS: '100', ...options.env } });
}

/** Every module, with the intents module built over the given (possibly wrapped) payment ports. */
export function payFactories(options: IntentsModuleOptions = {}): ModuleFactory[] {
  const intents = options.rail || options.chain ? createIntentsModule(options) : intentsModule;
  return moduleFactories.map((factory) => (factory === intentsModule ? intents : factory));
}

/** A fresh payer holding `usdg` (decimal) USDG and gas. */
export async function fundedPayer(app: TestApp, usdg = '1000'): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey());
  await app.ctx.chain.devchain!.fund(account.address, usdg);
  return account;
}

export const balanceOf = (app: TestApp, address: Address) => app.ctx.chain.devchain!.balanceOf(address);

const transferEvent = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

/** Every USDG Transfer into `to` on the devchain so far. */
export async function transfersTo(app: TestApp, to: Address) {
  return app.ctx.chain.publicClient.getLogs({ address: app.ctx.chain.asset.address, event: transferEvent, args: { to }, fromBlock: 0n });
}

export function pay(app: TestApp, intentId: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return app.origins.api!.inject({ method: 'POST', url: `/v1/payment-intents/${intentId}/pay`, headers });
}

/** The 402 challenge of an intent. */
export async function challengeOf(app: TestApp, intentId: string): Promise<PaymentRequired> {
  const response = await pay(app, intentId);
  if (response.statusCode !== 402) throw new Error(`expected 402, got ${response.statusCode} ${response.body}`);
  return readPaymentRequired((name) => response.headers[name.toLowerCase()] as string | undefined, response.json());
}

/** A PAYMENT-SIGNATURE value for the intent's challenge, signed by `payer`. */
export async function signedHeader(app: TestApp, intentId: string, payer: PrivateKeyAccount): Promise<string> {
  return (await signPayment(payer, await challengeOf(app, intentId))).header;
}

export async function getIntent(app: TestApp, apiKey: string, intentId: string) {
  const response = await app.origins.api!.inject({ method: 'GET', url: `/v1/payment-intents/${intentId}`, headers: { authorization: `Bearer ${apiKey}` } });
  return response.json();
}

export async function reconcile(app: TestApp, apiKey: string, intentId: string): Promise<LightMyRequestResponse> {
  return app.origins.api!.inject({ method: 'POST', url: `/v1/payment-intents/${intentId}/reconcile`, headers: { authorization: `Bearer ${apiKey}` } });
}

/** Polls `check` until it returns a truthy value (or fails after `timeoutMs`). */
export async function eventually<T>(check: () => Promise<T | null | undefined | false>, timeoutMs = 15_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
