// Embedded devchain: a real anvil process we own (by PID), chain id 4663, with the USDG stand-in
// placed at the canonical USDG address. State lives in <dataDir>/chain/state.json when dataDir is set.
// This file supervises it (start, restart after a crash, stop) and runs the chain's own chores (USDG,
// funding, its clock, state dumps); the host-side mechanics of an anvil process are in anvil.ts.
import type { ChildProcess } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { join, resolve } from 'node:path';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  isAddress,
  parseEther,
  parseUnits,
  toHex,
  zeroAddress,
  type Address,
  type Chain,
  type Hash,
  type PublicClient,
  type WalletClient,
} from 'viem';
import { anvilArgs, anvilRpc, assertPortFree, exitsWithin, freePort, keepOutput, prepareStateFile, reapOrphan, resolveAnvilBinary, spawnAnvil, waitForRpc } from './anvil.js';
import { catchUpChain, type ChainClockPorts } from './devchain-clock.js';
import { rpcTransport } from './rpc-fetch.js';
import { usdgAbi, usdgDeployedBytecode } from './usdg-artifact.js';

export const DEVCHAIN_CHAIN_ID = 4663;
export const USDG_ADDRESS: Address = '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168';
export const USDG_DECIMALS = 6;
/** anvil's well-known dev mnemonic: deterministic, unlocked accounts; never use outside dev. */
export const DEVCHAIN_MNEMONIC = 'test test test test test test test test test test test junk';
/** Account 0 of DEVCHAIN_MNEMONIC; unlocked in anvil, it holds the USDG minter role. */
export const DEVCHAIN_MINTER: Address = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
const GAS_TOP_UP = parseEther('10');
/** catchUp() mines an empty block when the latest one is at least this far behind the wall clock. */
const CATCH_UP_LAG_S = 2n;

export interface DevchainLogger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export interface DevchainOptions {
  /** null = ephemeral: no state file, the chain is gone after stop(). */
  dataDir: string | null;
  /** 0 = pick a free port once; it is kept across restarts so rpcUrl stays stable. */
  port: number;
  logger?: DevchainLogger;
  /** Defaults to the binary of the installed @foundry-rs/anvil platform package. */
  anvilPath?: string;
  /** How often anvil dumps state to disk, so a crash loses at most this much. Default 1. */
  stateIntervalSeconds?: number;
  /**
   * How often an idle devchain is brought to the wall clock (an empty block when its latest block is
   * this far behind). anvil mines only when a transaction arrives, so its latest block's time falls
   * behind; clients sign `validAfter = now - 600`. Default 30 000 ms; 0 turns it off.
   */
  clockIntervalMs?: number;
}

const silentLogger: DevchainLogger = { info() {}, warn() {}, error() {} };

/** The devchains this process runs, so a signal handler can reach them before the server object exists. */
const liveDevchains = new Set<Devchain>();

/**
 * For the first SIGINT/SIGTERM, synchronously: no devchain of this process restarts anvil from now on. A
 * signal sent to the process group also reaches anvil, whose exit would otherwise look like a crash and
 * start a new anvil (holding its port) while the service is stopping.
 */
export function haltDevchainRestarts(): void {
  for (const devchain of liveDevchains) devchain.haltRestarts();
}

/** Last resort of a stop that ran out of time: SIGKILL every anvil of this process by its PID. */
export function killDevchains(): void {
  for (const devchain of liveDevchains) devchain.kill();
}

export function devchainChain(rpcUrl: string): Chain {
  return defineChain({
    id: DEVCHAIN_CHAIN_ID,
    name: 'Tollgate devchain',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
}

interface Running {
  proc: ChildProcess;
  exited: Promise<void>;
  ready: boolean;
  startedAt: number;
}

export class Devchain {
  readonly chainId = DEVCHAIN_CHAIN_ID;
  readonly #dataDir: string | null;
  readonly #log: DevchainLogger;
  readonly #anvilPath: string;
  readonly #stateInterval: number;
  readonly #clockIntervalMs: number;
  #clockTimer: NodeJS.Timeout | null = null;
  #catchingUp: Promise<bigint> | null = null;
  #port: number;
  #running: Running | null = null;
  #stopping = true;
  /** Set by haltRestarts(): anvil's exit is no longer a crash to recover from. */
  #halted = false;
  #restartTimer: NodeJS.Timeout | null = null;
  #restartAttempts = 0;
  #outputTail: string[] = [];
  #txQueue: Promise<unknown> = Promise.resolve();
  #clients: { public: PublicClient; wallet: WalletClient } | null = null;
  readonly #killOnExit = (): void => {
    this.#running?.proc.kill('SIGTERM');
  };

  constructor(options: DevchainOptions) {
    // Absolute, so the orphan check can match anvil's command line whatever the cwd.
    this.#dataDir = options.dataDir === null ? null : resolve(options.dataDir);
    this.#port = options.port;
    this.#log = options.logger ?? silentLogger;
    this.#anvilPath = options.anvilPath ?? resolveAnvilBinary();
    this.#stateInterval = options.stateIntervalSeconds ?? 1;
    this.#clockIntervalMs = options.clockIntervalMs ?? 30_000;
  }

  get port(): number {
    return this.#port;
  }

  get rpcUrl(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  /** PID of the current anvil process, if one is running. */
  get pid(): number | undefined {
    return this.#running?.proc.pid;
  }

  get statePath(): string | null {
    return this.#dataDir === null ? null : join(this.#dataDir, 'chain', 'state.json');
  }

  get #pidPath(): string | null {
    return this.#dataDir === null ? null : join(this.#dataDir, 'chain', 'anvil.pid');
  }

  async start(): Promise<void> {
    if (!this.#stopping) return;
    this.#stopping = false;
    this.#halted = false;
    if (this.#port === 0) this.#port = await freePort();
    process.on('exit', this.#killOnExit);
    liveDevchains.add(this);
    try {
      await this.#launch();
    } catch (err) {
      await this.stop();
      throw err;
    }
    this.#log.info(`devchain: anvil pid ${this.pid} at ${this.rpcUrl} (chain ${this.chainId})`);
    if (this.#clockIntervalMs > 0) {
      const lag = BigInt(Math.max(1, Math.floor(this.#clockIntervalMs / 1000)));
      this.#clockTimer = setInterval(() => void this.catchUp(lag).catch(() => undefined), this.#clockIntervalMs);
      this.#clockTimer.unref();
    }
  }

  /**
   * Keeps the chain's clock current: when the latest block is `minLagSeconds` or more behind the
   * wall clock, mines one empty block stamped with the wall clock (anvil then keeps its clock from
   * there; it never moves backwards). Returns the latest block's timestamp. Concurrent calls share
   * one round trip. Automine is untouched: transactions still mine at once; with automine off nothing
   * is mined here (the block would include what is held in the pool).
   */
  catchUp(minLagSeconds = CATCH_UP_LAG_S): Promise<bigint> {
    this.#catchingUp ??= catchUpChain(this.#clockPorts, minLagSeconds).finally(() => (this.#catchingUp = null));
    return this.#catchingUp;
  }

  readonly #clockPorts: ChainClockPorts = {
    latest: async () => (await this.#viem().public.getBlock({ blockTag: 'latest' })).timestamp,
    rpc: (method, params) => this.#rpc(method, params),
    serial: (fn) => this.#serial(fn),
  };

  /**
   * Stops for good (no restart): SIGTERM so anvil dumps state, SIGKILL if it has not exited within
   * `timeoutMs` (a service stop releases anvil's port within its 5 s; the state is also dumped every second).
   */
  async stop(timeoutMs = 3_000): Promise<void> {
    this.#stopping = true;
    this.haltRestarts();
    if (this.#clockTimer) clearInterval(this.#clockTimer);
    this.#clockTimer = null;
    process.off('exit', this.#killOnExit);
    liveDevchains.delete(this);
    const current = this.#running;
    if (current) {
      current.proc.kill('SIGTERM');
      if (!(await exitsWithin(current.exited, timeoutMs))) {
        this.#log.warn(`devchain: anvil pid ${current.proc.pid} ignored SIGTERM for ${timeoutMs} ms; killing`);
        current.proc.kill('SIGKILL');
        await current.exited;
      }
    }
    if (this.#pidPath) await rm(this.#pidPath, { force: true });
  }

  /** No more restarts: an anvil exit from now on is final (stop() still stops a running one). Synchronous. */
  haltRestarts(): void {
    this.#halted = true;
    if (this.#restartTimer) clearTimeout(this.#restartTimer);
    this.#restartTimer = null;
  }

  /** SIGKILL to the running anvil, now (its port is free once the kernel has closed its sockets). */
  kill(): void {
    this.haltRestarts();
    this.#running?.proc.kill('SIGKILL');
  }

  /** Mints `amount` USDG (a decimal string, up to 6 places) to `address` and tops up its gas. */
  async fund(address: Address, amount: string): Promise<Hash> {
    if (!isAddress(address)) throw new Error(`invalid address: ${address}`);
    if (!/^\d+(\.\d{1,6})?$/.test(amount)) throw new Error(`invalid USDG amount: ${amount}`);
    await this.fundGas(address);
    const { public: pub, wallet } = this.#viem();
    return this.#serial(async () => {
      const hash = await wallet.writeContract({
        address: USDG_ADDRESS,
        abi: usdgAbi,
        functionName: 'mint',
        args: [getAddress(address), parseUnits(amount, USDG_DECIMALS)],
        account: DEVCHAIN_MINTER,
        chain: null,
      });
      const receipt = await pub.waitForTransactionReceipt({ hash });
      if (receipt.status !== 'success') throw new Error(`USDG mint reverted: ${hash}`);
      return hash;
    });
  }

  /**
   * The chain's whole state now (accounts, code, storage, blocks and transactions), as the JSON anvil loads with
   * `--state`: what `tollgate backup` keeps. Taken between two transactions of the devchain's own queue.
   */
  async dumpState(): Promise<Buffer> {
    const hex = (await this.#serial(() => this.#rpc('anvil_dumpState', []))) as string;
    return gunzipSync(Buffer.from(hex.replace(/^0x/, ''), 'hex'));
  }

  /** Sets the native balance to 10 ETH when it is below that. */
  async fundGas(address: Address): Promise<void> {
    const pub = this.#viem().public;
    if ((await pub.getBalance({ address })) >= GAS_TOP_UP) return;
    await this.#rpc('anvil_setBalance', [address, toHex(GAS_TOP_UP)]);
  }

  async balanceOf(address: Address): Promise<bigint> {
    return this.#viem().public.readContract({
      address: USDG_ADDRESS,
      abi: usdgAbi,
      functionName: 'balanceOf',
      args: [address],
    });
  }

  // ---- process management ----

  async #launch(restart = false): Promise<void> {
    const statePath = this.statePath;
    let reaped = false;
    if (statePath) {
      reaped = await reapOrphan(this.#pidPath, statePath, this.#log); // first: its SIGTERM dump is the freshest state
      await prepareStateFile(statePath, this.#log);
    }
    // A reaped anvil's leader thread shows as a zombie while a sibling thread may still hold the socket
    // for a moment: give its port a few seconds to come free.
    await assertPortFree(this.#port, reaped ? 5_000 : 0);
    const args = anvilArgs({ chainId: this.chainId, port: this.#port, mnemonic: DEVCHAIN_MNEMONIC, statePath, stateIntervalSeconds: this.#stateInterval });
    // stop() or a shutdown's haltRestarts() may have run while we awaited above; spawning now would leak a process.
    if (this.#stopping || (restart && this.#halted)) throw new Error('devchain stopped');
    this.#outputTail = [];
    const { proc, exited } = spawnAnvil(this.#anvilPath, args, (chunk) => keepOutput(this.#outputTail, chunk));
    const running: Running = { proc, exited, ready: false, startedAt: Date.now() };
    this.#running = running;
    proc.once('error', (err) => this.#log.error(`devchain: anvil spawn failed: ${err.message}`));
    proc.once('exit', (code, signal) => this.#onExit(running, code, signal));
    if (this.#pidPath && proc.pid) await writeFile(this.#pidPath, `${proc.pid}\n`);
    try {
      await waitForRpc(running.proc, this.rpcUrl, this.chainId, () => this.#outputTail);
      await this.#ensureToken();
    } catch (err) {
      proc.kill('SIGKILL');
      await exited;
      throw err;
    }
    running.ready = true;
  }

  #onExit(running: Running, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#running === running) this.#running = null;
    // Failures during startup are reported by #launch's caller; only a ready process is restarted.
    if (this.#stopping || this.#halted || !running.ready) return;
    if (Date.now() - running.startedAt > 30_000) this.#restartAttempts = 0;
    this.#scheduleRestart(`anvil exited unexpectedly (code ${code}, signal ${signal})`);
  }

  /**
   * Restarts anvil after a back-off, unless a stop or a shutdown's haltRestarts() comes first. What happened is
   * said when the restart goes ahead: a signal to the process group reaches anvil too, and its exit may be seen a
   * moment before this process's own handler halts restarts.
   */
  #scheduleRestart(exited?: string): void {
    const delay = Math.min(250 * 2 ** this.#restartAttempts, 10_000);
    this.#restartAttempts += 1;
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = null;
      if (this.#stopping || this.#halted) return;
      if (exited) this.#log.warn(`devchain: ${exited}; restarting`);
      this.#launch(true).then(
        () => this.#log.info(`devchain: anvil restarted, pid ${this.pid}`),
        (err: unknown) => {
          if (this.#stopping || this.#halted) return;
          this.#log.error(`devchain: restart failed: ${String(err)}`);
          this.#scheduleRestart();
        },
      );
    }, delay);
  }

  // ---- chain setup ----

  /** setCode only when the code differs, so restarts keep balances; then claim the minter once. */
  async #ensureToken(): Promise<void> {
    const pub = this.#viem().public;
    const code = await pub.getCode({ address: USDG_ADDRESS });
    if ((code ?? '0x').toLowerCase() !== usdgDeployedBytecode.toLowerCase()) {
      await this.#rpc('anvil_setCode', [USDG_ADDRESS, usdgDeployedBytecode]);
      this.#log.info(`devchain: USDG code placed at ${USDG_ADDRESS}`);
    }
    const minter = await pub.readContract({ address: USDG_ADDRESS, abi: usdgAbi, functionName: 'minter' });
    if (minter === zeroAddress) {
      await this.#serial(async () => {
        const hash = await this.#viem().wallet.writeContract({
          address: USDG_ADDRESS,
          abi: usdgAbi,
          functionName: 'initialize',
          args: [DEVCHAIN_MINTER],
          account: DEVCHAIN_MINTER,
          chain: null,
        });
        await pub.waitForTransactionReceipt({ hash });
      });
    } else if (getAddress(minter) !== DEVCHAIN_MINTER) {
      this.#log.warn(`devchain: USDG minter is ${minter}, not ${DEVCHAIN_MINTER}; fund() will fail`);
    }
  }

  #viem(): { public: PublicClient; wallet: WalletClient } {
    if (this.#port === 0) throw new Error('devchain not started');
    if (!this.#clients) {
      const chain = devchainChain(this.rpcUrl);
      // Automine: receipts exist right away, so poll fast instead of viem's 4 s default.
      const transport = rpcTransport(this.rpcUrl, { retryCount: 0 });
      this.#clients = {
        public: createPublicClient({ chain, transport, pollingInterval: 50 }),
        wallet: createWalletClient({ chain, transport, pollingInterval: 50 }),
      };
    }
    return this.#clients;
  }

  /** One minter, one nonce sequence: mint/initialize transactions go out one at a time. */
  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#txQueue.then(fn, fn);
    this.#txQueue = run.catch(() => undefined);
    return run;
  }

  #rpc(method: string, params: unknown[]): Promise<unknown> {
    return anvilRpc(this.rpcUrl, method, params);
  }
}

/** Starts a throwaway devchain on a free port with no state file (for tests). */
export async function startEphemeralDevchain(options: { logger?: DevchainLogger } = {}): Promise<Devchain> {
  const chain = new Devchain({ dataDir: null, port: 0, ...options });
  await chain.start();
  return chain;
}
