// Debian's Chromium driven by playwright-core, and an EIP-1193 wallet injected into its pages whose
// signatures are made here, in the test, by a real viem account (so the page signs exactly what a
// browser wallet would: eth_signTypedData_v4 over the JSON typed data it is handed).
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { LocalAccount } from 'viem/accounts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** CI installs Chromium (.ci/run), so there the tests must run; elsewhere they say why they skip. */
export const browserMissing = !existsSync(CHROMIUM) && process.env.CI !== 'true';
if (browserMissing) console.warn(`test/web: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH): the browser tests are skipped`);

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Screenshots of every run (test artifacts); UPDATE_SCREENSHOTS=1 writes the README's copies in docs/screenshots. */
export const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(root, 'docs/screenshots') : path.join(root, 'test/web/.artifacts');

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    // The flags this machine class needs: no sandbox as root, and no background calls to Google's hosts.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

export interface TestWallet {
  /** What the page asked the wallet, in order. */
  calls: string[];
  /** Refuse the next signature as a user would (EIP-1193 error 4001). */
  declineNext(): void;
}

/** Installs `window.ethereum` in every page of `page`'s context, backed by `account` on `chainId`. */
export async function injectWallet(page: Page, account: LocalAccount, chainId: number): Promise<TestWallet> {
  const calls: string[] = [];
  let decline = false;
  await page.exposeFunction('__tollgateTestWallet', async (method: string, paramsJson: string) => {
    calls.push(method);
    const params = JSON.parse(paramsJson) as unknown[];
    switch (method) {
      case 'eth_requestAccounts':
      case 'eth_accounts':
        return { result: [account.address] };
      case 'eth_chainId':
        return { result: `0x${chainId.toString(16)}` };
      case 'wallet_switchEthereumChain':
        return { result: null };
      case 'eth_signTypedData_v4': {
        if (decline) {
          decline = false;
          return { error: { code: 4001, message: 'User rejected the request.' } };
        }
        const [from, json] = params as [string, string];
        if (from.toLowerCase() !== account.address.toLowerCase()) return { error: { code: 4100, message: 'Unknown account' } };
        const { domain, types, primaryType, message } = JSON.parse(json);
        const { EIP712Domain: _domainType, ...rest } = types;
        return { result: await account.signTypedData({ domain, types: rest, primaryType, message }) };
      }
      default:
        return { error: { code: 4200, message: `Unsupported method ${method}` } };
    }
  });
  await page.addInitScript(() => {
    const bridge = (globalThis as unknown as { __tollgateTestWallet(method: string, params: string): Promise<{ result?: unknown; error?: { code: number; message: string } }> }).__tollgateTestWallet;
    (globalThis as unknown as { ethereum: unknown }).ethereum = {
      async request({ method, params }: { method: string; params?: unknown[] }) {
        const answer = await bridge(method, JSON.stringify(params ?? []));
        if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
        return answer.result;
      },
    };
  });
  return { calls, declineNext: () => (decline = true) };
}
