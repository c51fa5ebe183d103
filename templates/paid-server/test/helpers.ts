import type { FacilitatorClient } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { x402Client, x402HTTPClient } from '@x402/core/client';
import { ExactEvmScheme as ExactEvmClientScheme } from '@x402/evm/exact/client';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { DEFAULT_TERMS, loadConfig, type Config } from '../src/config.js';

export const PAY_TO = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

export const testConfig = (env: Record<string, string> = {}): Config =>
  loadConfig({ X402_PAY_TO: PAY_TO.toLowerCase(), PORT: '0', PUBLIC_URL: 'https://weather.example', ...env });

/** An in-memory facilitator that accepts any payload matching the requirements (no chain). */
export function stubFacilitator() {
  const calls: Array<{ op: 'verify' | 'settle'; payload: PaymentPayload; requirements: PaymentRequirements }> = [];
  const payer = (p: PaymentPayload) => (p.payload as { authorization: { from: string } }).authorization.from;
  const facilitator: FacilitatorClient = {
    getSupported: async () => ({
      kinds: [{ x402Version: 2, scheme: 'exact', network: DEFAULT_TERMS.network }],
      extensions: [],
      signers: {},
    }),
    verify: async (payload, requirements) => {
      calls.push({ op: 'verify', payload, requirements });
      return { isValid: true, payer: payer(payload) };
    },
    settle: async (payload, requirements) => {
      calls.push({ op: 'settle', payload, requirements });
      return { success: true, transaction: `0x${'ab'.repeat(32)}`, network: requirements.network, payer: payer(payload) };
    },
  };
  return { facilitator, calls };
}

/** A payer with a fresh key that allows USDG on the template's network (it is not an x402 default asset). */
export function testPayer() {
  const account = privateKeyToAccount(generatePrivateKey());
  const client = x402Client.fromConfig({
    schemes: [{ network: DEFAULT_TERMS.network, client: new ExactEvmClientScheme(account) }],
    spendControls: { allowedAssets: [{ network: DEFAULT_TERMS.network, asset: DEFAULT_TERMS.asset, maxAmountPerPayment: '1000' }] },
  });
  return { account, http: new x402HTTPClient(client) };
}

/** The x402 dance by hand: GET, read the 402, sign, retry. */
export async function payAndGet(url: string, payer = testPayer()) {
  const first = await fetch(url);
  if (first.status !== 402) throw new Error(`expected 402, got ${first.status}`);
  const required = payer.http.getPaymentRequiredResponse((name) => first.headers.get(name), await first.json());
  const payload = await payer.http.createPaymentPayload(required);
  const paid = await fetch(url, { headers: payer.http.encodePaymentSignatureHeader(payload) });
  return { required, payload, paid };
}
