// Debian's Chromium driven by playwright-core, and an EIP-1193 wallet injected into its pages whose
// signatures are made here, in the test, by a real viem account (so the page signs exactly what a
// browser wallet would: eth_signTypedData_v4 over the JSON typed data it is handed).
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import type { LocalAccount } from 'viem/accounts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** CI installs Chromium (.ci/run), so there the tests must run; elsewhere they say why they skip. */
export const browserMissing = !existsSync(CHROMIUM) && process.env.CI !== 'true';
if (browserMissing) console.warn(`test/web: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH): the browser tests are skipped`);

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Screenshots of every run (test artifacts); UPDATE_SCREENSHOTS=1 writes the README's copies in docs/screenshots. */
export const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(root, 'docs/screenshots') : path.join(root, 'test/web/.artifacts');

/** What a test file drives: contexts and pages of its worker's Chromium; `close` closes the ones it opened. */
export interface TestBrowser {
  newContext(options?: BrowserContextOptions): Promise<BrowserContext>;
  /** A page in a context of its own (as Browser.newPage), closed with the file's others. */
  newPage(options?: BrowserContextOptions): Promise<Page>;
  close(): Promise<void>;
}

let worker: Promise<Browser> | null = null;

/**
 * One Chromium per test worker, launched by the first browser file it runs (a worker runs its files one after
 * another: isolate is off): a launch and its close cost ~2.5 s of CPU and ~4 s, and nineteen files launched their
 * own in each pass. Files stay apart as a browser's users do: each has its own contexts (cookies, storage, pages),
 * closed when it is done. The browser ends with the worker (playwright closes it when the process exits, and
 * Chromium quits when its pipe to playwright closes).
 */
export async function launchChromium(): Promise<TestBrowser> {
  // A browser that failed to launch or has gone (crashed, killed) is replaced, so one file's loss is not the next's.
  if (!(await worker?.catch(() => null))?.isConnected()) {
    worker = chromium.launch({
      executablePath: CHROMIUM,
      // The flags this machine class needs: no sandbox as root, and no background calls to Google's hosts.
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  }
  const browser = await worker!;
  const opened = new Set<BrowserContext>();
  const newContext = async (options?: BrowserContextOptions) => {
    const context = await browser.newContext(options);
    opened.add(context);
    return context;
  };
  return {
    newContext,
    newPage: async (options) => (await newContext(options)).newPage(),
    close: async () => {
      await Promise.all([...opened].map((context) => context.close()));
      opened.clear();
    },
  };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

export interface TestWallet {
  /** What the page asked the wallet, in order. */
  calls: string[];
  /** Every request with its params, in order. */
  requests: { method: string; params: unknown }[];
  /** The chain the wallet is on now. */
  chainId(): number;
  /** Refuse the next signature as a user would (EIP-1193 error 4001). */
  declineNext(): void;
}

export interface TestWalletOptions {
  /** The chain the wallet is on at first (default: the account's chain). */
  startOn?: number;
  /**
   * Chains the wallet knows at first (default: the account's chain and startOn). Switching to another one
   * answers 4902 (EIP-3326: unrecognized chain) until wallet_addEthereumChain adds it, as MetaMask does.
   */
  knows?: number[];
  /** wallet_watchAsset: accept it, or refuse as a user would (4001). Default accept. */
  watchAsset?: 'accept' | 'refuse';
}

/**
 * Installs `window.ethereum` in every page of `page`'s context, backed by `account` whose payments are on
 * `chainId`. Like a browser wallet it is on one chain at a time, signs typed data only for the chain it is on,
 * and knows a set of chains (wallet_addEthereumChain checks its parameters as EIP-3085 asks, then switches).
 */
export async function injectWallet(page: Page, account: LocalAccount, chainId: number, options: TestWalletOptions = {}): Promise<TestWallet> {
  const calls: string[] = [];
  const requests: { method: string; params: unknown }[] = [];
  let decline = false;
  let current = options.startOn ?? chainId;
  const known = new Set(options.knows ?? [chainId, current]);
  const hexId = (id: number) => `0x${id.toString(16)}`;
  await page.exposeFunction('__tollgateTestWallet', async (method: string, paramsJson: string) => {
    calls.push(method);
    const params = JSON.parse(paramsJson) as unknown;
    requests.push({ method, params });
    switch (method) {
      case 'eth_requestAccounts':
      case 'eth_accounts':
        return { result: [account.address] };
      case 'eth_chainId':
        return { result: hexId(current) };
      case 'wallet_switchEthereumChain': {
        const wanted = Number.parseInt((params as [{ chainId: string }])[0].chainId, 16);
        if (!known.has(wanted)) return { error: { code: 4902, message: `Unrecognized chain ID "${hexId(wanted)}". Try adding the chain using wallet_addEthereumChain first.` } };
        current = wanted;
        return { result: null };
      }
      case 'wallet_addEthereumChain': {
        const [chain] = params as [{ chainId?: unknown; chainName?: unknown; rpcUrls?: unknown; nativeCurrency?: { name?: unknown; symbol?: unknown; decimals?: unknown } }];
        const valid =
          typeof chain?.chainId === 'string' && /^0x[1-9a-f][0-9a-f]*$/.test(chain.chainId) &&
          typeof chain.chainName === 'string' && chain.chainName !== '' &&
          Array.isArray(chain.rpcUrls) && chain.rpcUrls.length > 0 && chain.rpcUrls.every((u) => typeof u === 'string' && /^https?:\/\//.test(u)) &&
          typeof chain.nativeCurrency?.name === 'string' && typeof chain.nativeCurrency.symbol === 'string' && chain.nativeCurrency.decimals === 18;
        if (!valid) return { error: { code: -32602, message: `Invalid parameters: ${paramsJson}` } };
        const id = Number.parseInt(chain.chainId as string, 16);
        known.add(id);
        current = id; // MetaMask offers to switch once the chain is added
        return { result: null };
      }
      case 'wallet_watchAsset':
        return options.watchAsset === 'refuse' ? { error: { code: 4001, message: 'User rejected the request.' } } : { result: true };
      case 'eth_signTypedData_v4': {
        if (decline) {
          decline = false;
          return { error: { code: 4001, message: 'User rejected the request.' } };
        }
        const [from, json] = params as [string, string];
        if (from.toLowerCase() !== account.address.toLowerCase()) return { error: { code: 4100, message: 'Unknown account' } };
        const { domain, types, primaryType, message } = JSON.parse(json);
        // As MetaMask: the typed data's chain must be the one the wallet is on.
        if (Number(domain.chainId) !== current) return { error: { code: -32603, message: `Provided chainId "${domain.chainId}" must match the active chainId "${current}"` } };
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
      async request({ method, params }: { method: string; params?: unknown }) {
        const answer = await bridge(method, JSON.stringify(params ?? []));
        if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
        return answer.result;
      },
    };
  });
  return { calls, requests, chainId: () => current, declineNext: () => (decline = true) };
}
