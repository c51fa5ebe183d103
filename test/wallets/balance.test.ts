// GET /v1/wallets/{walletId}/balance (extension): the wallet's USDG as the devchain reads it, for the
// management credential that owns the wallet only; a wallet without an address yet says so (409).
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WalletProvider } from '../../src/modules/wallets/provider.js';
import type { TestApp } from '../helpers/test-app.js';
import { buildWalletsApp, call, createWallet } from './helpers.js';

/** Plain keys; refuses to provision while `failing` (a KMS that is down). */
class SwitchableProvider implements WalletProvider {
  readonly name = 'switchable';
  failing = false;
  async provision() {
    if (this.failing) throw new Error('KMS unavailable');
    const key = generatePrivateKey();
    return { address: privateKeyToAccount(key).address, keyRef: `plain:${key}` };
  }
  async signer(_walletId: string, keyRef: string) {
    return privateKeyToAccount(keyRef.slice('plain:'.length) as `0x${string}`);
  }
}

let app: TestApp;
let mgmt: string;
const provider = new SwitchableProvider();

beforeAll(async () => {
  app = await buildWalletsApp({ wallets: { provider } });
  mgmt = await app.mgmtSecret('balance');
});
afterAll(async () => app?.close());

describe('wallet balance', () => {
  it('answers the chain’s balance in atomic units, and follows the chain', async () => {
    const { wallet } = await createWallet(app, mgmt, 'balance-1');
    const empty = await call(app, 'GET', `/v1/wallets/${wallet.id}/balance`, mgmt);
    expect(empty.status).toBe(200);
    expect(empty.body.data).toEqual({ network: app.ctx.chain.asset.network, asset: app.ctx.chain.asset.address, symbol: 'USDG', decimals: 6, amount: '0' });
    await app.ctx.chain.devchain!.fund(wallet.address, '2.5');
    expect((await call(app, 'GET', `/v1/wallets/${wallet.id}/balance`, mgmt)).body.data.amount).toBe('2500000');
  });

  it('is not found for another management credential, and refused to the wallet’s own credential', async () => {
    const { wallet, secret } = await createWallet(app, mgmt, 'balance-2');
    const other = await app.mgmtSecret('someone-else');
    const foreign = await call(app, 'GET', `/v1/wallets/${wallet.id}/balance`, other);
    expect(foreign.status).toBe(404);
    expect(JSON.stringify(foreign.body)).not.toContain(wallet.address.toLowerCase().slice(2));
    expect((await call(app, 'GET', `/v1/wallets/${wallet.id}/balance`, secret)).status).toBe(401);
    expect((await call(app, 'GET', `/v1/wallets/${wallet.id}/balance`, '')).status).toBe(401);
  });

  it('says a wallet without an address has no balance yet (409 wallet_not_active)', async () => {
    provider.failing = true; // for the rest of this file: the wallet stays failed, without an address
    const created = await call(app, 'POST', '/v1/wallets', mgmt, { externalId: 'balance-3', name: 'No address' });
    expect(created.body.data.wallet).toMatchObject({ status: 'failed', address: null });
    const answer = await call(app, 'GET', `/v1/wallets/${created.body.data.wallet.id}/balance`, mgmt);
    expect(answer.status).toBe(409);
    expect(answer.body).toMatchObject({ data: { status: 'failed' } });
    expect(answer.body.message).toContain('no address');
  });
});
