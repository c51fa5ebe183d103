import { randomBytes } from 'node:crypto';
import { VolumeLostError, type DeployedRuntime, type InstanceRef, type RuntimeProvider, type RuntimeSpec } from './runtime-provider.js';

export interface FlyOptions {
  /** The Machines API, https://api.machines.dev by default. */
  apiUrl: string;
  token: string;
  orgSlug: string;
  region: string;
  /** An image with this repository's build, e.g. the Dockerfile's: the machine runs its dist/agent-runtime/main.js. */
  image: string;
  /** Where a runtime answers, `{app}` replaced by its app name: https://{app}.fly.dev by default (FLY_APP_URL). */
  appUrl: string;
}

/** An address of an app, as the Machines API lists it (`GET /v1/apps/{app}/ip_assignments`). */
interface IpAssignment {
  ip: string;
  region?: string;
  service_name?: string;
  /** True for the shared Anycast IPv4. */
  shared?: boolean;
}

/**
 * The public addresses an app needs before Fly's proxy routes <app>.fly.dev to its machines. An app made
 * through the Machines API has none: Fly's docs say apps with public services created with `fly machine` or
 * the Machines API must allocate a dedicated IPv6 themselves (`fly ips allocate-v6`), and that an app serving
 * TLS + HTTP on 443 gets a shared IPv4 (only on a `fly deploy`, which we do not run)
 * (https://fly.io/docs/networking/services/, "IPv6" and "Shared IPv4"). The Machines API allocates them with
 * `POST /v1/apps/{app}/ip_assignments` and a body `{ type }`, and lists them with `GET` on the same path
 * (`{ ips: [{ ip, region, service_name, shared, created_at }] }`): Fly's warm-pool blueprint calls it
 * (https://fly.io/docs/blueprints/warm-pool-user-machines/), fly-go implements it and flyctl's
 * `fly ips allocate-v4 --shared` / `allocate-v6` go through it
 * (https://github.com/superfly/fly-go/blob/main/flaps/flaps_ip_assignments.go), OpenAPI at
 * https://docs.machines.dev. (Older pages use the GraphQL mutation allocateIpAddress at
 * https://api.fly.io/graphql, which Fly says may change without notice.) No region: shared_v4 is not regional
 * (the API rejects one) and a v6 without one is global Anycast.
 */
const PUBLIC_IPS: Array<{ type: 'shared_v4' | 'v6'; present: (ip: IpAssignment) => boolean }> = [
  { type: 'shared_v4', present: (ip) => ip.shared === true && !ip.ip.includes(':') },
  // fdaa: is the private (Flycast) range: not reachable from the internet.
  { type: 'v6', present: (ip) => ip.ip.includes(':') && !ip.ip.toLowerCase().startsWith('fdaa:') },
];

/**
 * Where the runtime listens inside its machine, and where its volume is mounted. Fly's proxy reaches the port
 * on the machine's private IPv4, so the runtime is told to listen on 0.0.0.0 (AGENT_RUNTIME_HOST), not 127.0.0.1
 * (https://fly.io/docs/networking/app-services/).
 */
const INTERNAL_PORT = 8080;
const VOLUME_PATH = '/data';
const WAIT_SECONDS = 60;

export class FlyApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/**
 * Runtimes on Fly Machines, over the Machines REST API: one app per agent (named by the instance's appName)
 * with its public IPs (a shared IPv4 and a dedicated IPv6, allocated once: a redeploy lists them and adds only
 * what is missing), a volume for its data, and a machine with the instance's guest size mounting it. A
 * redeploy adopts the volume it is given and fails if that volume is gone rather than start on an empty one;
 * the previous machine is destroyed first (a volume attaches to one machine). The runtime is reached at
 * `appUrl` with {app} replaced (https://<app>.fly.dev by default), with the token passed in its environment.
 */
export class FlyRuntimeProvider implements RuntimeProvider {
  readonly name = 'fly';

  constructor(private readonly options: FlyOptions) {}

  async deploy(spec: RuntimeSpec): Promise<DeployedRuntime> {
    const app = spec.appName;
    if ((await this.#call('GET', `/v1/apps/${app}`, undefined, [404])) === null) {
      await this.#call('POST', '/v1/apps', { app_name: app, org_slug: this.options.orgSlug });
    }
    await this.#allocatePublicIps(app);
    let volumeId = spec.volumeRef;
    if (volumeId) {
      if ((await this.#call('GET', `/v1/apps/${app}/volumes/${volumeId}`, undefined, [404])) === null) throw new VolumeLostError(`volume ${volumeId} of ${app} is gone; not starting on an empty one`);
    } else {
      const volume = (await this.#call('POST', `/v1/apps/${app}/volumes`, { name: 'agent_data', region: this.options.region, size_gb: spec.volumeSizeGb })) as { id: string };
      volumeId = volume.id;
    }
    for (const machine of (await this.#call('GET', `/v1/apps/${app}/machines`)) as Array<{ id: string }>) {
      await this.#call('DELETE', `/v1/apps/${app}/machines/${machine.id}?force=true`, undefined, [404]);
    }
    const token = randomBytes(32).toString('hex');
    const machine = (await this.#call('POST', `/v1/apps/${app}/machines`, {
      name: app,
      region: this.options.region,
      config: {
        image: this.options.image,
        init: { entrypoint: ['node', '/app/dist/agent-runtime/main.js'] },
        env: {
          AGENT_ID: spec.agentId,
          AGENT_TYPE: spec.type,
          INSTANCE_ID: spec.instanceId,
          AGENT_RUNTIME_TOKEN: token,
          AGENT_RUNTIME_DATA_DIR: VOLUME_PATH,
          AGENT_RUNTIME_PORT: String(INTERNAL_PORT),
          AGENT_RUNTIME_HOST: '0.0.0.0',
          AGENT_DAILY_TOKEN_BUDGET: String(spec.dailyTokenBudget),
          AGENT_SERVICE_URL: spec.serviceUrl,
        },
        guest: { cpu_kind: 'shared', cpus: spec.cpus, memory_mb: spec.memoryMb },
        mounts: [{ volume: volumeId, path: VOLUME_PATH }],
        services: [{ protocol: 'tcp', internal_port: INTERNAL_PORT, ports: [{ port: 443, handlers: ['tls', 'http'] }] }],
        restart: { policy: 'always' },
      },
    })) as { id: string; instance_id?: string };
    await this.#call('GET', `/v1/apps/${app}/machines/${machine.id}/wait?state=started&timeout=${WAIT_SECONDS}`);
    return { url: this.options.appUrl.replaceAll('{app}', app), token, volumeRef: volumeId, machineRef: machine.id };
  }

  /** The app's public IPs (see PUBLIC_IPS): listed first, so a redeploy allocates only what is missing. */
  async #allocatePublicIps(app: string): Promise<void> {
    const path = `/v1/apps/${app}/ip_assignments`;
    const { ips } = (await this.#call('GET', path)) as { ips?: IpAssignment[] | null };
    for (const { type, present } of PUBLIC_IPS) {
      if (!(ips ?? []).some(present)) await this.#call('POST', path, { type });
    }
  }

  async stop(instance: InstanceRef): Promise<void> {
    if (!instance.machineRef) return;
    const path = `/v1/apps/${instance.appName}/machines/${instance.machineRef}`;
    if ((await this.#call('POST', `${path}/stop`, {}, [404])) === null) return;
    await this.#call('GET', `${path}/wait?state=stopped&timeout=${WAIT_SECONDS}`);
  }

  /** The machine, the volume and the app: the runtime's data is gone. */
  async remove(instance: InstanceRef): Promise<void> {
    const app = instance.appName;
    if (instance.machineRef) await this.#call('DELETE', `/v1/apps/${app}/machines/${instance.machineRef}?force=true`, undefined, [404]);
    await this.#call('DELETE', `/v1/apps/${app}/volumes/${instance.volumeRef}`, undefined, [404]);
    await this.#call('DELETE', `/v1/apps/${app}`, undefined, [404]);
  }

  async close(): Promise<void> {}

  /** One API call; `absent` statuses answer null (e.g. 404 for "not there"), any other failure throws. */
  async #call(method: string, path: string, body?: unknown, absent: number[] = []): Promise<unknown> {
    const response = await fetch(`${this.options.apiUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.options.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout((WAIT_SECONDS + 10) * 1000),
    });
    if (absent.includes(response.status)) return null;
    const text = await response.text();
    if (!response.ok) throw new FlyApiError(`Fly Machines API ${method} ${path.split('?')[0]} answered ${response.status}: ${text.slice(0, 300)}`, response.status);
    return text ? JSON.parse(text) : {};
  }
}
