import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import type { TestApp } from '../helpers/test-app.js';
import { randomAddress } from '../x402/support.js';

/** Requirements as our resource server builds them, paying a fresh receiver. */
export function requirementsFor(app: TestApp, amount = '100', payTo = randomAddress()): PaymentRequirements {
  return app.ctx.x402.requirements({ url: 'http://test/resource', description: 'test', mimeType: 'application/json', amount, payTo });
}

export async function post<T = SettleResponse | VerifyResponse>(
  app: TestApp,
  path: 'verify' | 'settle',
  paymentPayload: unknown,
  paymentRequirements: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${app.urls.facilitator}/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ x402Version: 2, paymentPayload, paymentRequirements }),
  });
  return { status: res.status, body: (await res.json()) as T };
}

export const settle = (app: TestApp, payload: PaymentPayload, requirements: PaymentRequirements) =>
  post<SettleResponse>(app, 'settle', payload, requirements);
export const verify = (app: TestApp, payload: PaymentPayload, requirements: PaymentRequirements) =>
  post<VerifyResponse>(app, 'verify', payload, requirements);
