// Running anvil on this host, whoever supervises it (devchain.ts does): finding its binary, ports, its
// state file, an orphan of an earlier run, waiting for its RPC to answer, and plain JSON-RPC calls to it.
// Apart from devchain.ts because none of it knows of restarts, USDG or the chain's clock: each function
// does one thing to the process or the files it leaves behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, rename } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';

/** Where these functions report (the devchain's logger). */
interface AnvilLog {
  warn(msg: string): void;
  error(msg: string): void;
}

/** The real anvil binary (not the npm bin.mjs wrapper), so the PID we hold is anvil's. */
export function resolveAnvilBinary(): string {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const pkg = `@foundry-rs/anvil-${process.platform}-${arch}`;
  const pkgJson = createRequire(import.meta.url).resolve(`${pkg}/package.json`);
  return join(pkgJson, '..', 'bin', process.platform === 'win32' ? 'anvil.exe' : 'anvil');
}

/**
 * anvil's command line: the chain id, loopback only, the port and the dev mnemonic; with a state file, the
 * chain is loaded from it at start and dumped to it on exit and every `stateIntervalSeconds`.
 */
export function anvilArgs(o: { chainId: number; port: number; mnemonic: string; statePath: string | null; stateIntervalSeconds: number }): string[] {
  const args = [
    '--chain-id', String(o.chainId),
    '--host', '127.0.0.1',
    '--port', String(o.port),
    '--mnemonic', o.mnemonic,
  ];
  if (o.statePath) {
    // --state = load at start + dump on exit; the interval covers crashes (SIGKILL skips the exit dump).
    args.push('--state', o.statePath, '--state-interval', String(o.stateIntervalSeconds));
  }
  return args;
}

/** Spawns anvil; `exited` settles when it has exited, and its stdout and stderr go to `onOutput`. */
export function spawnAnvil(anvilPath: string, args: string[], onOutput: (chunk: Buffer) => void): { proc: ChildProcess; exited: Promise<void> } {
  const proc = spawn(anvilPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.stdout?.on('data', onOutput);
  proc.stderr?.on('data', onOutput);
  return { proc, exited };
}

/** One JSON-RPC call to anvil (its own methods too: anvil_*, evm_*), failing on an error answer. */
export async function anvilRpc(rpcUrl: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(5_000),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

/**
 * Until anvil answers at `rpcUrl` with `chainId`; fails when the process exits first (with the last of its
 * output, `outputTail()`), when another chain answers, or after `timeoutMs`.
 */
export async function waitForRpc(proc: ChildProcess, rpcUrl: string, chainId: number, outputTail: () => string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new Error(`anvil exited during startup:\n${outputTail().join('\n')}`);
    }
    try {
      const answered = await anvilRpc(rpcUrl, 'eth_chainId', []);
      if (Number(answered) !== chainId) {
        throw new Error(`unexpected chain id ${String(answered)} at ${rpcUrl}`);
      }
      return;
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('unexpected chain id')) throw err;
      await sleep(50);
    }
  }
  throw new Error(`anvil did not answer at ${rpcUrl} within ${timeoutMs} ms`);
}

/** Keeps the last 40 non-empty lines of anvil's output in `tail` (for a startup failure's message). */
export function keepOutput(tail: string[], chunk: Buffer): void {
  for (const line of chunk.toString('utf8').split('\n')) {
    if (line.trim() === '') continue;
    tail.push(line);
  }
  if (tail.length > 40) tail.splice(0, tail.length - 40);
}

/** A truncated state file (killed mid-dump) makes anvil refuse to start: fall back to the last good copy. */
export async function prepareStateFile(statePath: string, log: AnvilLog): Promise<void> {
  await mkdir(join(statePath, '..'), { recursive: true });
  const backup = `${statePath}.bak`;
  if (!existsSync(statePath)) return;
  try {
    JSON.parse(await readFile(statePath, 'utf8'));
    await copyFile(statePath, backup);
  } catch {
    const aside = `${statePath}.corrupt-${Date.now()}`;
    await rename(statePath, aside);
    log.error(`devchain: unreadable chain state moved to ${aside}`);
    if (existsSync(backup)) {
      await copyFile(backup, statePath);
      log.warn('devchain: restored chain state from the last good backup');
    }
  }
}

/**
 * If a previous run of ours was killed without stopping anvil (e.g. SIGKILL of node), its anvil still
 * holds the port and the state file. The pid file finds it; /proc/<pid>/cmdline proves it is that
 * anvil (not a reused pid) before we stop it.
 */
export async function reapOrphan(pidPath: string | null, statePath: string, log: AnvilLog): Promise<boolean> {
  if (!pidPath) return false;
  const pid = Number((await readFile(pidPath, 'utf8').catch(() => '')).trim());
  if (!Number.isInteger(pid) || pid <= 0) return false;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  if (!cmdline.split('\0').includes(statePath)) return false;
  log.warn(`devchain: stopping orphaned anvil pid ${pid} from a previous run`);
  process.kill(pid, 'SIGTERM');
  // Dead means reaped or a zombie: cmdline empties before the kernel closes the process's sockets,
  // so an empty cmdline alone would let us race the port.
  const gone = async (): Promise<boolean> => {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    return stat === '' || /^\d+ \(.*\) [ZX]/s.test(stat);
  };
  for (let waited = 0; waited < 10_000 && !(await gone()); waited += 50) await sleep(50);
  if (await gone()) return true;
  // Still dumping its state after 10 s (a loaded machine): kill it, and wait until it has let go of the port.
  process.kill(pid, 'SIGKILL');
  for (let waited = 0; waited < 5_000 && !(await gone()); waited += 50) await sleep(50);
  return true;
}

/** A port free on loopback now (the kernel's pick). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Fails (after `waitMs`) when something else owns the port, instead of probing a foreign node by mistake. */
export async function assertPortFree(port: number, waitMs = 0): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const free = await new Promise<boolean>((resolve, reject) => {
      const server = createServer();
      server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(false) : reject(err)));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return;
    if (Date.now() >= deadline) throw new Error(`devchain port ${port} is already in use`);
    await sleep(50);
  }
}

/** Whether `exited` settles within `ms`. */
export async function exitsWithin(exited: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(resolve, ms, false)));
  const result = await Promise.race([exited.then(() => true), timeout]);
  clearTimeout(timer);
  return result;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
