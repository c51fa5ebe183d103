// What the relay tests share: funded payers, credentials from the mppx client, and the relay's answers.
import type { LocalAccount } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { expect } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';
import { mppxCredential } from './mppx-client.js';

export const AMOUNT = '10000'; // 0.01 USDG

export async function payer(app: TestApp, amount = '1') {
  const account = privateKeyToAccount(generatePrivateKey());
  if (amount !== '0') await app.ctx.chain.devchain!.fund(account.address, amount);
  return account;
}

/** A credential for a new recipient, signed by `account` (default: a new payer funded with `fund` USDG). */
export async function credentialFor(target: TestApp, options: { amount?: string; fund?: string; account?: LocalAccount } = {}) {
  const account = options.account ?? (await payer(target, options.fund ?? '1'));
  const recipient = privateKeyToAccount(generatePrivateKey()).address;
  const built = await mppxCredential({ account, amount: options.amount ?? AMOUNT, recipient });
  return { account, recipient, ...built, body: { credential: built.credential, request: built.request } };
}

export function post(target: TestApp, path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${target.urls.relay}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export async function expectRelayError(res: Response, status: number, code: string) {
  const body = (await res.json()) as { success: boolean; accepted: boolean; error: { code: string; message: string } };
  expect([res.status, body.error?.code], body.error?.message).toEqual([status, code]);
  expect(body).toMatchObject({ success: false, accepted: false });
}

export const nonceOf = (built: { credential: { payload: unknown } }) => (built.credential.payload as { nonce: `0x${string}` }).nonce;
