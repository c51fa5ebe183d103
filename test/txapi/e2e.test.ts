import { getAddress, verifyTypedData, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { txapiModule } from '../../src/modules/txapi/module.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { CHAIN_ID, TestChain } from '../indexer/chain-helpers.js';

let chain: TestChain;
let app: TestApp;

// The service as registered (txapiModule over ctx.chain: the test app's devchain and relayer key).
beforeAll(async () => {
  app = await buildTestApp({ roles: ['api', 'worker'], env: { INDEXER_POLL_MS: '50' }, factories: [txapiModule] });
  chain = TestChain.attach(app.ctx.chain.devchain!, app.ctx.chain.relayer!);
  await chain.devchain.fundGas(chain.relayer.address);
}, 120_000);
afterAll(async () => {
  await app?.close();
});

interface Attestation {
  paymentId: Hex;
  payer: Address;
  recipient: Address;
  recipientSequence: string;
  token: Address;
  amount: string;
}
interface TxRecord {
  to: Address;
  transactionHash: Hex;
  chainId: number;
  attestation: Attestation;
  signature: Hex;
  signer: Address;
}

const get = async <T>(path: string): Promise<T> => {
  const response = await fetch(`${app.urls.api}${path}`);
  expect(response.status).toBe(200);
  return (await response.json()) as T;
};

async function waitForRecords(recipient: Address, count: number): Promise<TxRecord[]> {
  for (let i = 0; i < 200; i++) {
    const records = await get<TxRecord[]>(`/x402scan/transactions?recipient=${recipient}`);
    if (records.length >= count) return records;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`records for ${recipient} did not appear`);
}

describe('transaction API end to end', () => {
  it('lists three payments newest first, pages by cursor, and signs each record verifiably', async () => {
    const payer = await chain.payer();
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const hashes: Hex[] = [];
    for (const amount of ['1', '2', '3']) hashes.push((await chain.pay(payer, recipient, amount)).receipt.transactionHash);

    const list = await waitForRecords(recipient, 3);
    expect(list.map((r) => r.transactionHash)).toEqual([...hashes].reverse());
    expect(list.map((r) => r.attestation.recipientSequence)).toEqual(['3', '2', '1']);
    expect(list.map((r) => r.attestation.amount)).toEqual(['3000000', '2000000', '1000000']);

    const after1 = await get<TxRecord[]>(`/x402scan/transactions?recipient=${recipient}&chain=eip155:${CHAIN_ID}&afterSequence=1`);
    expect(after1.map((r) => r.attestation.recipientSequence)).toEqual(['2', '3']);
    expect(after1.map((r) => r.transactionHash)).toEqual(hashes.slice(1));

    const one = await get<TxRecord>(`/x402scan/transactions/${list[0].attestation.paymentId}`);
    expect(one).toEqual(list[0]);

    const info = await get<{ domain: { chainId: number }; types: Record<string, Array<{ name: string; type: string }>>; primaryType: string; signer: Address }>(
      '/x402scan/attestation',
    );
    expect(info.domain).toEqual({ name: 'Tollgate Payment Attestation', version: '2', chainId: CHAIN_ID });
    const verify = (record: TxRecord, message: Attestation) =>
      verifyTypedData({
        address: info.signer,
        domain: info.domain,
        types: info.types,
        primaryType: info.primaryType,
        message: { ...message, recipientSequence: BigInt(message.recipientSequence), amount: BigInt(message.amount) },
        signature: record.signature,
      });

    const stranger = getAddress(privateKeyToAccount(generatePrivateKey()).address);
    for (const record of list) {
      expect(record.signer).toBe(info.signer);
      expect(await verify(record, record.attestation)).toBe(true);
      const a = record.attestation;
      const tampered: Attestation[] = [
        { ...a, paymentId: `0x${a.paymentId.slice(2, 65)}${a.paymentId.endsWith('0') ? '1' : '0'}` as Hex },
        { ...a, payer: stranger },
        { ...a, recipient: stranger },
        { ...a, recipientSequence: String(Number(a.recipientSequence) + 1) },
        { ...a, token: stranger },
        { ...a, amount: String(BigInt(a.amount) + 1n) },
      ];
      for (const message of tampered) expect(await verify(record, message)).toBe(false);
      // The domain binds the chain: the same message claimed for another chain does not verify.
      const otherChain = await verifyTypedData({
        address: info.signer,
        domain: { ...info.domain, chainId: 1 },
        types: info.types,
        primaryType: info.primaryType,
        message: { ...a, recipientSequence: BigInt(a.recipientSequence), amount: BigInt(a.amount) },
        signature: record.signature,
      });
      expect(otherChain).toBe(false);
    }
  });
});
