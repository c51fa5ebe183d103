// Permit2's gas attacker: a contract payer whose EIP-1271 check burns gas. Permit2 checks a contract owner's
// permit signature by calling that code with all the gas the settlement forwards, so the payer would decide what
// a settle costs us. Refused by default (payer_has_code) on both Permit2 schemes; allowed, its settle is estimated
// under FACILITATOR_MAX_PERMIT2_SETTLE_GAS and refused with gas_over_ceiling. Every attack ends with the relayer's
// float and transaction count read from the chain: nothing sent.
import { readFileSync } from 'node:fs';
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import { createWalletClient, getAddress, http, maxUint256, parseAbi, type Address, type LocalAccount } from 'viem';
import { generatePrivateKey, privateKeyToAccount, toAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSolidity } from '../../scripts/compile-contracts.mjs';
import { PERMIT2_ADDRESS } from '../../src/chain/x402-contracts.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { permit2Requirements, relayerState, signPermit } from '../facilitator/permit2-support.js';
import { post } from '../facilitator/support.js';
import { randomAddress } from '../x402/support.js';
import { gasTally, reportTally } from './support.js';

const burnerCode = compileSolidity({ 'GasBurningWallet.sol': readFileSync(new URL('../../contracts/test/GasBurningWallet.sol', import.meta.url), 'utf8') }).GasBurningWallet!;

/** A GasBurningWallet holding USDG that approved Permit2 (its 1271 check says yes to USDG's permit, as to anything). */
async function burningPayer(app: TestApp, burn: bigint): Promise<Address> {
  const deployer = privateKeyToAccount(generatePrivateKey());
  await app.ctx.chain.devchain!.fundGas(deployer.address);
  const wallet = createWalletClient({ account: deployer, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
  const hash = await wallet.deployContract({ abi: [{ type: 'constructor', stateMutability: 'nonpayable', inputs: [{ name: 'burn', type: 'uint256' }] }], bytecode: burnerCode.bytecode, args: [burn] });
  const burner = (await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash })).contractAddress!;
  await app.ctx.chain.devchain!.fund(burner, '5');
  const approve = await wallet.writeContract({
    address: app.ctx.chain.asset.address,
    abi: parseAbi(['function permit(address owner, address spender, uint256 value, uint256 deadline, bytes signature)']),
    functionName: 'permit',
    args: [burner, PERMIT2_ADDRESS, maxUint256, maxUint256, '0x01'],
    gas: 10_000_000n,
  });
  expect((await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash: approve })).status).toBe('success');
  return burner;
}

/** The contract as the permit's owner, signed by any key: the burner accepts every signature. */
const asPayer = (address: Address): LocalAccount => {
  const key = privateKeyToAccount(generatePrivateKey());
  return toAccount({ address, signMessage: (a) => key.signMessage(a), signTransaction: (a) => key.signTransaction(a), signTypedData: (a) => key.signTypedData(a as never) });
};

async function attack(app: TestApp, run: () => Promise<void>): Promise<void> {
  const before = await relayerState(app);
  await run();
  const after = await relayerState(app);
  gasTally.attacks += 1;
  gasTally.refusedSends += after.sent - before.sent;
  expect(after.sent - before.sent, 'transactions sent for a refused payer').toBe(0);
  expect(after.wei).toBe(before.wei);
}

const call = <T>(app: TestApp, path: 'verify' | 'settle', payload: PaymentPayload, requirements: PaymentRequirements) => post<T>(app, path, payload, requirements);

afterAll(() => reportTally('permit2'));

describe('a contract payer burning gas in its signature check, over Permit2', () => {
  let app: TestApp;
  let burner: Address;
  beforeAll(async () => {
    app = await buildTestApp();
    burner = await burningPayer(app, 5_000_000n);
  });
  afterAll(async () => app?.close());

  for (const scheme of ['exact', 'upto'] as const) {
    it(`${scheme}: refused by default at verify and settle with payer_has_code; nothing is sent`, async () => {
      const requirements = permit2Requirements(app, scheme, '1000', randomAddress());
      const payload = await signPermit(asPayer(burner), requirements);
      await attack(app, async () => {
        expect((await call<VerifyResponse>(app, 'verify', payload, requirements)).body).toMatchObject({ isValid: false, invalidReason: 'payer_has_code', payer: getAddress(burner) });
        expect((await call<SettleResponse>(app, 'settle', payload, requirements)).body).toMatchObject({ success: false, errorReason: 'payer_has_code' });
      });
    });
  }
});

describe('allowed contract payers (FACILITATOR_CONTRACT_PAYERS=allow) stay under the Permit2 ceiling', () => {
  let app: TestApp;
  let burner: Address;
  beforeAll(async () => {
    app = await buildTestApp({ env: { FACILITATOR_CONTRACT_PAYERS: 'allow' } });
    burner = await burningPayer(app, 5_000_000n);
  });
  afterAll(async () => app?.close());

  it('a settle that would burn 5M gas in the payer’s code is refused with gas_over_ceiling before sending', async () => {
    const requirements = permit2Requirements(app, 'exact', '1000', randomAddress());
    const payload = await signPermit(asPayer(burner), requirements);
    await attack(app, async () => {
      expect((await call<VerifyResponse>(app, 'verify', payload, requirements)).body).toMatchObject({ isValid: false, invalidReason: 'gas_over_ceiling' });
      expect((await call<SettleResponse>(app, 'settle', payload, requirements)).body).toMatchObject({ success: false, errorReason: 'gas_over_ceiling' });
    });
  });
});
