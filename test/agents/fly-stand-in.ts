// A live stand-in of Fly.io for tests: the Machines REST API (apps, IP assignments, volumes, machines, wait)
// with the paths, bodies and states of the real one, and Fly's proxy in front of the apps.
//
// The API keeps its records in memory, with the rules that matter here: bearer auth, 404 for what is not
// there, a volume attaches to one live machine, an attached volume cannot be deleted, `wait` blocks until the
// machine really is in the state asked for, and deleting an app deletes its machines, volumes and IPs.
//
// Machines are real: a started machine runs the agent runtime program (src/agent-runtime/main.ts through tsx,
// as local-provider.ts runs it under vitest) as a child process with the machine's config.env, except that it
// listens on a free loopback port (AGENT_RUNTIME_PORT 0) and a path under a mount (AGENT_RUNTIME_DATA_DIR=/data)
// is a directory of the stand-in's per volume, so a volume's data outlives the machines that mount it, as on
// Fly. A machine is `started` once the runtime prints `agent runtime listening <url>`; when its process
// exits it is `stopped`, unless Fly's restart policy boots it again with the same env (`always`; `on-failure`,
// the default, when the exit was not clean; a machine that keeps dying before it listens stays stopped).
// `stop` sends SIGTERM (SIGKILL after Fly's 5 s kill timeout), `destroy` kills. Restart policies:
// fly.io/docs/machines/guides-examples/machine-restart-policy.
//
// The proxy: `<stand-in>/apps/<app>/<path>` goes to `<path>` on the app's started machine (method, headers
// and body; the answer streamed back as it comes, so text/event-stream works), standing in for
// https://<app>.fly.dev. Like Fly, it routes only apps with a public IP allocated through the API (v4, v6,
// shared_v4; a private_v6 Flycast address is not public). For any other app it closes the connection without
// an answer, as a client of a name with no address sees it fail to connect (no DNS record); an app that is
// reachable but has no started machine answers 503, as Fly's proxy does when no machine can take the request.
//
// Fly's proxy reaches a machine on its private IPv4, so the adapter has the runtime listen on 0.0.0.0
// (fly.io/docs/networking/app-services); here every process listens on 127.0.0.1 and is reached there.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream';
import { fileURLToPath } from 'node:url';

type MachineState = 'created' | 'starting' | 'started' | 'stopping' | 'stopped' | 'destroyed';

export interface StandInMachine {
  id: string;
  app: string;
  state: MachineState;
  config: {
    image: string;
    init?: { entrypoint: string[] };
    env: Record<string, string>;
    guest: { cpu_kind: string; cpus: number; memory_mb: number };
    mounts: Array<{ volume: string; path: string }>;
    services?: unknown[];
    restart?: { policy: 'no' | 'always' | 'on-failure' };
  };
  /** The runtime's process and where it listens while the machine runs; null otherwise. */
  pid: number | null;
  address: string | null;
  /** How often the restart policy started it again. */
  restarts: number;
  /** The tail of its process's stdout and stderr (for a failing test's message). */
  output: string;
}

export type IpType = 'v4' | 'v6' | 'shared_v4' | 'private_v6';
export interface StandInIp {
  ip: string;
  type: IpType;
  region: string;
  service_name: string;
  shared: boolean;
  created_at: string;
}

export interface FlyStandInOptions {
  /** Node arguments of the program a machine runs (default: the agent runtime through tsx). */
  program?: string[];
}

interface Running {
  child: ChildProcess;
  exited: Promise<void>;
  /** An exit the restart policy must leave alone: stop, destroy, a kill without restart, close(). */
  final: boolean;
  listened: boolean;
}

const RUNTIME_MAIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/agent-runtime/main.ts');
const START_TIMEOUT_MS = 30_000;
/** Fly's default kill timeout: SIGKILL this long after the stop signal. */
const KILL_TIMEOUT_MS = 5_000;
const RESTART_DELAY_MS = 50;
/** Starts in a row that die before listening, after which the restart policy gives up. */
const MAX_FAILED_STARTS = 5;
const IP_TYPES: IpType[] = ['v4', 'v6', 'shared_v4', 'private_v6'];
const LISTENING = /agent runtime listening (http:\/\/\S+)/;

export async function startFlyStandIn(token: string, options: FlyStandInOptions = {}) {
  const program = options.program ?? ['--import', 'tsx', RUNTIME_MAIN];
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'fly-stand-in-'));
  const apps = new Map<string, { org: string }>();
  const ips = new Map<string, StandInIp[]>();
  const volumes = new Map<string, { id: string; app: string; size_gb: number; region: string; name?: string }>();
  const machines = new Map<string, StandInMachine>();
  const running = new Map<string, Running>();
  const restartTimers = new Map<string, NodeJS.Timeout>();
  const failedStarts = new Map<string, number>();
  /** The API calls, `METHOD /path` (the proxy's requests are not API calls). */
  const calls: string[] = [];
  let seq = 0;
  let closing = false;

  const live = (m: StandInMachine) => m.state !== 'destroyed';
  const attachedTo = (volumeId: string) => [...machines.values()].find((m) => live(m) && m.config.mounts.some((mount) => mount.volume === volumeId));
  const volumeDir = (volumeId: string) => path.join(root, 'volumes', volumeId);
  /** A path inside the machine: on a mounted volume's directory, else on the machine's own (lost with it). */
  const hostPath = (machine: StandInMachine, inside: string) => {
    const mount = machine.config.mounts.find((m) => inside === m.path || inside.startsWith(`${m.path.replace(/\/+$/, '')}/`));
    const dir = mount ? path.join(volumeDir(mount.volume), path.relative(mount.path, inside)) : path.join(root, 'machines', machine.id, inside);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  };
  const view = (m: StandInMachine) => ({ id: m.id, name: m.id, app: m.app, state: m.state, region: 'ams', instance_id: `i${m.id}-${m.restarts}`, config: m.config });
  const isPublic = (app: string) => (ips.get(app) ?? []).some((ip) => ip.type !== 'private_v6');

  async function waitForState(machine: StandInMachine, wanted: string, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (machine.state !== wanted && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    return machine.state === wanted;
  }

  /** Boots the machine: its program with its env, `started` once it listens. */
  function boot(machine: StandInMachine): void {
    machine.state = 'starting';
    const env: Record<string, string> = { PATH: process.env.PATH ?? '', ...machine.config.env, AGENT_RUNTIME_PORT: '0', AGENT_RUNTIME_HOST: '127.0.0.1' };
    if (env.AGENT_RUNTIME_DATA_DIR) env.AGENT_RUNTIME_DATA_DIR = hostPath(machine, env.AGENT_RUNTIME_DATA_DIR);
    // An IPC channel, as the local provider opens: the runtime exits if this test process dies.
    const child = spawn(process.execPath, [`--max-old-space-size=${machine.config.guest.memory_mb}`, ...program], { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    const run: Running = { child, final: false, listened: false, exited: new Promise((resolve) => child.once('exit', () => resolve())) };
    running.set(machine.id, run);
    machine.pid = child.pid ?? null;
    const timer = setTimeout(() => child.kill('SIGKILL'), START_TIMEOUT_MS);
    const record = (chunk: Buffer) => {
      machine.output = (machine.output + chunk.toString()).slice(-8192);
    };
    let stdout = ''; // this process's own: machine.output holds the lines of the runs before it
    child.stdout!.on('data', (chunk: Buffer) => {
      record(chunk);
      if (!run.listened) stdout = (stdout + chunk.toString()).slice(-8192);
      const match = stdout.match(LISTENING);
      if (match && !run.listened && running.get(machine.id) === run && machine.state === 'starting') {
        clearTimeout(timer);
        run.listened = true;
        failedStarts.delete(machine.id);
        machine.address = match[1]!;
        machine.state = 'started';
      }
    });
    child.stderr!.on('data', record);
    child.once('exit', (code) => {
      clearTimeout(timer);
      exited(machine, run, code);
    });
  }

  /** The process ended: the machine is stopped, and Fly's restart policy decides whether it boots again. */
  function exited(machine: StandInMachine, run: Running, code: number | null): void {
    if (running.get(machine.id) !== run) return;
    running.delete(machine.id);
    machine.pid = null;
    machine.address = null;
    if (machine.state === 'destroyed') return;
    machine.state = 'stopped';
    if (run.final || closing) return;
    const policy = machine.config.restart?.policy ?? 'on-failure';
    if (policy === 'no' || (policy === 'on-failure' && code === 0)) return;
    const failures = run.listened ? 0 : (failedStarts.get(machine.id) ?? 0) + 1;
    failedStarts.set(machine.id, failures);
    if (failures >= MAX_FAILED_STARTS) return;
    // Restarted, the machine does not rest in `stopped`: it is starting again (a stop or destroy meanwhile wins).
    machine.state = 'starting';
    restartTimers.set(
      machine.id,
      setTimeout(() => {
        restartTimers.delete(machine.id);
        if (machine.state !== 'starting' || closing) return;
        machine.restarts += 1;
        boot(machine);
      }, RESTART_DELAY_MS),
    );
  }

  /** Ends the machine's process without a restart; SIGKILL after the kill timeout. */
  async function halt(machine: StandInMachine, signal: NodeJS.Signals): Promise<void> {
    clearTimeout(restartTimers.get(machine.id));
    restartTimers.delete(machine.id);
    const run = running.get(machine.id);
    if (!run) return;
    run.final = true;
    run.child.kill(signal);
    const killer = setTimeout(() => run.child.kill('SIGKILL'), KILL_TIMEOUT_MS);
    await run.exited;
    clearTimeout(killer);
  }

  async function destroy(machine: StandInMachine): Promise<void> {
    machine.state = 'destroyed';
    await halt(machine, 'SIGKILL');
    fs.rmSync(path.join(root, 'machines', machine.id), { recursive: true, force: true });
  }

  /** Fly's proxy: `/apps/<app>/<path>` to `<path>` on the app's started machine, streamed both ways. */
  function proxy(request: http.IncomingMessage, response: http.ServerResponse, app: string, rest: string): void {
    if (!apps.has(app) || !isPublic(app)) {
      request.socket.destroy();
      return;
    }
    const machine = [...machines.values()].find((m) => m.app === app && m.state === 'started' && m.address);
    if (!machine) {
      response.writeHead(503, { 'content-type': 'text/plain' }).end(`no started machine of ${app} to take the request`);
      return;
    }
    const target = new URL(machine.address!);
    const upstream = http.request({ host: target.hostname, port: target.port, path: rest, method: request.method, headers: { ...withoutHopByHop(request.headers), host: target.host } });
    upstream.on('response', (answer) => {
      response.writeHead(answer.statusCode ?? 502, withoutHopByHop(answer.headers));
      response.flushHeaders();
      // Chunk by chunk as the machine writes them; a machine that dies mid-answer cuts the client's off.
      pipeline(answer, response, () => {});
    });
    upstream.on('error', () => {
      if (response.headersSent) response.destroy();
      else if (!response.destroyed) response.writeHead(502, { 'content-type': 'text/plain' }).end(`machine of ${app} did not answer`);
    });
    response.on('close', () => {
      if (!response.writableFinished) upstream.destroy();
    });
    request.pipe(upstream);
  }

  async function api(request: http.IncomingMessage, response: http.ServerResponse, url: URL): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const send = (status: number, payload: unknown = {}) => void response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    calls.push(`${request.method} ${url.pathname}`);
    if (request.headers.authorization !== `Bearer ${token}`) return send(401, { error: 'You must be authenticated to view this.' });
    let body: any;
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    } catch {
      return send(400, { error: 'invalid JSON body' });
    }
    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent); // v1 apps <app> <kind> <id> <action>
    const [, , app, kind, id, action] = parts;
    if (request.method === 'POST' && url.pathname === '/v1/apps') {
      if (apps.has(body.app_name)) return send(422, { error: 'Name has already been taken' });
      apps.set(body.app_name, { org: body.org_slug });
      return send(201, { id: body.app_name, created_at: Date.now() });
    }
    if (!app || !apps.has(app)) return send(404, { error: 'app not found' });
    if (!kind) {
      if (request.method === 'GET') return send(200, { name: app, organization: { slug: apps.get(app)!.org } });
      if (request.method === 'DELETE') {
        // Deleting an app deletes what it holds: its machines, volumes and addresses.
        for (const machine of [...machines.values()].filter((m) => m.app === app && live(m))) await destroy(machine);
        for (const volume of [...volumes.values()].filter((v) => v.app === app)) {
          volumes.delete(volume.id);
          fs.rmSync(volumeDir(volume.id), { recursive: true, force: true });
        }
        ips.delete(app);
        apps.delete(app);
        return send(202);
      }
    }
    if (kind === 'ip_assignments') {
      const assigned = ips.get(app) ?? [];
      if (request.method === 'GET' && !id) return send(200, { ips: assigned.map(({ type: _type, ...ip }) => ip) });
      if (request.method === 'POST' && !id) {
        const type = body?.type as IpType;
        if (!IP_TYPES.includes(type)) return send(400, { error: `type must be one of ${IP_TYPES.join(', ')}` });
        if (body.region && (type === 'shared_v4' || type === 'private_v6')) return send(400, { error: `${type} addresses are not regional` });
        const n = (seq += 1);
        // Documentation prefixes (RFC 5737, RFC 3849); fdaa: is Fly's private range.
        const ip = { v4: `198.51.100.${n % 256}`, shared_v4: `203.0.113.${n % 256}`, v6: `2001:db8::${n.toString(16)}`, private_v6: `fdaa:0:1::${n.toString(16)}` }[type];
        const record: StandInIp = { ip, type, region: body.region || 'global', service_name: body.service_name ?? '', shared: type === 'shared_v4', created_at: new Date().toISOString() };
        ips.set(app, [...assigned, record]);
        const { type: _type, ...answer } = record;
        return send(200, answer);
      }
      if (request.method === 'DELETE' && id) {
        if (!assigned.some((ip) => ip.ip === id)) return send(404, { error: 'ip assignment not found' });
        ips.set(app, assigned.filter((ip) => ip.ip !== id));
        return send(200, {});
      }
    }
    if (kind === 'volumes') {
      if (request.method === 'POST' && !id) {
        const volume = { id: `vol_${(seq += 1)}`, app, size_gb: body.size_gb, region: body.region, name: body.name };
        volumes.set(volume.id, volume);
        return send(200, { ...volume, state: 'created', attached_machine_id: null });
      }
      const volume = id ? volumes.get(id) : undefined;
      if (!volume || volume.app !== app) return send(404, { error: 'volume not found' });
      if (request.method === 'GET') return send(200, { ...volume, attached_machine_id: attachedTo(volume.id)?.id ?? null });
      if (request.method === 'DELETE') {
        if (attachedTo(volume.id)) return send(412, { error: 'volume is attached to a machine' });
        volumes.delete(volume.id);
        fs.rmSync(volumeDir(volume.id), { recursive: true, force: true });
        return send(200, volume);
      }
    }
    if (kind === 'machines') {
      if (request.method === 'GET' && !id) return send(200, [...machines.values()].filter((m) => m.app === app && live(m)).map(view));
      if (request.method === 'POST' && !id) {
        for (const mount of body.config.mounts ?? []) {
          if (!volumes.has(mount.volume)) return send(400, { error: `volume ${mount.volume} not found` });
          if (attachedTo(mount.volume)) return send(412, { error: `volume ${mount.volume} is attached to another machine` });
        }
        const machine: StandInMachine = { id: `m${(seq += 1)}`, app, state: 'created', config: { mounts: [], ...body.config }, pid: null, address: null, restarts: 0, output: '' };
        machines.set(machine.id, machine);
        const answer = { ...view(machine), name: body.name, region: body.region };
        setImmediate(() => machine.state === 'created' && !closing && boot(machine));
        return send(200, answer);
      }
      const machine = id ? machines.get(id) : undefined;
      if (!machine || machine.app !== app || !live(machine)) return send(404, { error: 'machine not found' });
      if (request.method === 'GET' && !action) return send(200, view(machine));
      if (request.method === 'GET' && action === 'wait') {
        const reached = await waitForState(machine, url.searchParams.get('state') ?? 'started', Number(url.searchParams.get('timeout') ?? 60) * 1000);
        return reached ? send(200, { ok: true }) : send(408, { error: 'deadline_exceeded' });
      }
      if (request.method === 'POST' && action === 'start') {
        const previous = machine.state;
        if (previous === 'stopped' || previous === 'created') boot(machine);
        return send(200, { previous_state: previous });
      }
      if (request.method === 'POST' && action === 'stop') {
        // Answers at once; the machine is `stopping` until its process has exited (`wait?state=stopped`).
        if (running.has(machine.id)) {
          machine.state = 'stopping';
          void halt(machine, 'SIGTERM');
        } else {
          await halt(machine, 'SIGTERM');
          machine.state = 'stopped';
        }
        return send(200, { ok: true });
      }
      if (request.method === 'DELETE' && !action) {
        if ((machine.state === 'started' || machine.state === 'starting') && url.searchParams.get('force') !== 'true') {
          return send(412, { error: 'machine is running; stop it or force' });
        }
        await destroy(machine);
        return send(200, { ok: true });
      }
    }
    return send(404, { error: `no route ${request.method} ${url.pathname}` });
  }

  const server = http.createServer((request, response) => {
    const url = new URL(request.url!, 'http://fly');
    const routed = url.pathname.match(/^\/apps\/([^/]+)(\/.*)?$/);
    if (routed) return proxy(request, response, decodeURIComponent(routed[1]!), `${routed[2] ?? '/'}${url.search}`);
    api(request, response, url).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(error) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  /** The app's machine that is not destroyed (the newest), or null. */
  const machineOf = (app: string) => [...machines.values()].filter((m) => m.app === app && live(m)).at(-1) ?? null;

  return {
    url,
    apps,
    ips,
    volumes,
    machines,
    calls,
    machineOf,
    /** The directory holding a volume's data (what a machine mounting it sees at the mount path). */
    volumeDir,
    /** Waits until the machine is in `state` (true) or the time is up (false). */
    waitForState: (machine: StandInMachine, state: MachineState, timeoutMs = START_TIMEOUT_MS) => waitForState(machine, state, timeoutMs),
    /**
     * SIGKILLs the process of the app's machine, as a crash. Its restart policy then applies, unless
     * `restart: false`: the machine stays stopped, as one whose host failed.
     */
    async killMachineProcess(app: string, { restart = true }: { restart?: boolean } = {}): Promise<StandInMachine> {
      const machine = machineOf(app);
      const run = machine && running.get(machine.id);
      if (!machine || !run) throw new Error(`no machine of ${app} is running`);
      run.final = !restart;
      run.child.kill('SIGKILL');
      await run.exited;
      return machine;
    },
    /** Ends every machine's process, then the server, then the volumes' directories. */
    async close(): Promise<void> {
      closing = true;
      for (const timer of restartTimers.values()) clearTimeout(timer);
      await Promise.all([...machines.values()].map((machine) => halt(machine, 'SIGTERM')));
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

export type FlyStandIn = Awaited<ReturnType<typeof startFlyStandIn>>;

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** A proxy forwards end-to-end headers only (RFC 9110 §7.6.1); Node frames each side's body itself. */
function withoutHopByHop(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));
}
