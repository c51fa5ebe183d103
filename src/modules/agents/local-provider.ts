import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { projectPath } from '../../platform/project-root.js';
import { VolumeLostError, type DeployedRuntime, type InstanceRef, type RuntimeProvider, type RuntimeSpec } from './runtime-provider.js';

/** The runtime program: the compiled one when this service runs compiled (from dist/); main.ts (through tsx) under vitest. */
function runtimeCommand(): string[] {
  const compiled = !fileURLToPath(import.meta.url).endsWith('.ts');
  return compiled ? [projectPath('dist', 'agent-runtime', 'main.js')] : ['--import', 'tsx', projectPath('src', 'agent-runtime', 'main.ts')];
}

interface Running {
  child: ChildProcess;
  url: string;
  exited: Promise<void>;
}

const START_TIMEOUT_MS = 30_000;

/**
 * Runs each agent's runtime as a child process of this service on 127.0.0.1, with its own port and its
 * volume as a directory under `<data dir>/agents/`. Memory is capped with V8's heap limit; the CPU count is
 * recorded, not enforced (one process uses about one core). Processes end with the service (close(), or
 * their IPC channel closing when the service dies); after a restart the supervisor's probe finds them gone
 * and starts them again on their volumes. A volume is a directory holding the runtime's config.json: one
 * without it is gone, and a redeploy refuses it.
 */
export class LocalRuntimeProvider implements RuntimeProvider {
  readonly name = 'local';
  readonly #running = new Map<string, Running>();

  constructor(
    private readonly volumesDir: string,
    private readonly log: Logger,
  ) {}

  async deploy(spec: RuntimeSpec): Promise<DeployedRuntime> {
    await this.stop({ agentId: spec.agentId, appName: spec.appName, volumeRef: spec.volumeRef ?? '', machineRef: null });
    const volume = spec.volumeRef ?? path.join(this.volumesDir, spec.appName);
    if (spec.volumeRef && !fs.existsSync(path.join(volume, 'config.json'))) throw new VolumeLostError(`the volume of ${spec.appName} is gone; not starting on an empty one`);
    fs.mkdirSync(volume, { recursive: true, mode: 0o700 });
    const token = randomBytes(32).toString('hex');
    const child = spawn(process.execPath, [`--max-old-space-size=${spec.memoryMb}`, ...runtimeCommand()], {
      env: {
        PATH: process.env.PATH,
        AGENT_ID: spec.agentId,
        AGENT_TYPE: spec.type,
        INSTANCE_ID: spec.instanceId,
        AGENT_RUNTIME_TOKEN: token,
        AGENT_RUNTIME_DATA_DIR: volume,
        AGENT_RUNTIME_PORT: '0',
        AGENT_DAILY_TOKEN_BUDGET: String(spec.dailyTokenBudget),
        AGENT_SERVICE_URL: spec.serviceUrl,
      },
      // An IPC channel the runtime watches: if this service dies (even by SIGKILL), the channel closes and
      // the runtime exits, so a restarted service never finds a stray runtime on the same volume.
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const url = await this.#listening(child, exited);
    this.#running.set(spec.agentId, { child, url, exited });
    void exited.then(() => {
      if (this.#running.get(spec.agentId)?.child === child) this.#running.delete(spec.agentId);
    });
    return { url, token, volumeRef: volume, machineRef: String(child.pid) };
  }

  async stop(instance: InstanceRef): Promise<void> {
    const running = this.#running.get(instance.agentId);
    if (!running) return;
    this.#running.delete(instance.agentId);
    running.child.kill('SIGTERM');
    // A stopped process (SIGSTOP, a debugger) holds the TERM until it runs again: let it run and handle it.
    if (process.platform !== 'win32') running.child.kill('SIGCONT');
    const killer = setTimeout(() => running.child.kill('SIGKILL'), 5_000);
    await running.exited;
    clearTimeout(killer);
  }

  async remove(instance: InstanceRef): Promise<void> {
    await this.stop(instance);
    // Only a directory of ours: a volume ref is a path this provider made under its volumes dir.
    const volume = path.resolve(instance.volumeRef);
    if (volume.startsWith(path.resolve(this.volumesDir) + path.sep)) fs.rmSync(volume, { recursive: true, force: true });
  }

  async close(): Promise<void> {
    await Promise.all([...this.#running.keys()].map((agentId) => this.stop({ agentId, appName: '', volumeRef: '', machineRef: null })));
  }

  #listening(child: ChildProcess, exited: Promise<void>): Promise<string> {
    return new Promise((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`agent runtime did not start within ${START_TIMEOUT_MS / 1000} s: ${output.slice(-500)}`));
      }, START_TIMEOUT_MS);
      const read = (chunk: Buffer) => {
        output += chunk.toString();
        const match = output.match(/agent runtime listening (http:\/\/\S+)/);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      };
      child.stdout!.on('data', read);
      child.stderr!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        this.log.warn({ pid: child.pid }, `agent runtime: ${chunk.toString().trim()}`);
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`agent runtime exited during start: ${output.slice(-500)}`));
      });
    });
  }
}
