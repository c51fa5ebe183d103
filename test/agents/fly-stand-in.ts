// A stand-in of the Fly Machines REST API (apps, volumes, machines, wait) for tests: the paths, bodies and
// states of the real API, kept in memory, with its rules that matter here: bearer auth, a volume attaches to
// one live machine, an attached volume cannot be deleted, `wait` blocks until the state is reached.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StandInMachine {
  id: string;
  app: string;
  state: 'created' | 'started' | 'stopped' | 'destroyed';
  config: { image: string; init?: { entrypoint: string[] }; env: Record<string, string>; guest: { cpu_kind: string; cpus: number; memory_mb: number }; mounts: Array<{ volume: string; path: string }> };
}

export async function startFlyStandIn(token: string) {
  const apps = new Map<string, { org: string }>();
  const volumes = new Map<string, { id: string; app: string; size_gb: number; region: string }>();
  const machines = new Map<string, StandInMachine>();
  const calls: string[] = [];
  let seq = 0;
  const attachedTo = (volumeId: string) => [...machines.values()].find((m) => m.state !== 'destroyed' && m.config.mounts.some((mount) => mount.volume === volumeId));

  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    const url = new URL(request.url!, 'http://fly');
    const send = (status: number, payload: unknown = {}) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    calls.push(`${request.method} ${url.pathname}`);
    if (request.headers.authorization !== `Bearer ${token}`) return send(401, { error: 'You must be authenticated to view this.' });
    const parts = url.pathname.split('/').filter(Boolean); // v1 apps <app> <kind> <id> <action>
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
        apps.delete(app);
        return send(202);
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
        return send(200, volume);
      }
    }
    if (kind === 'machines') {
      if (request.method === 'GET' && !id) return send(200, [...machines.values()].filter((m) => m.app === app && m.state !== 'destroyed'));
      if (request.method === 'POST' && !id) {
        for (const mount of body.config.mounts ?? []) {
          if (!volumes.has(mount.volume)) return send(400, { error: `volume ${mount.volume} not found` });
          if (attachedTo(mount.volume)) return send(412, { error: `volume ${mount.volume} is attached to another machine` });
        }
        const machine: StandInMachine = { id: `m${(seq += 1)}`, app, state: 'created', config: body.config };
        machines.set(machine.id, machine);
        setTimeout(() => machine.state === 'created' && (machine.state = 'started'), 20);
        return send(200, { id: machine.id, name: body.name, state: machine.state, region: body.region, instance_id: `i${seq}`, config: body.config });
      }
      const machine = id ? machines.get(id) : undefined;
      if (!machine || machine.app !== app || machine.state === 'destroyed') return send(404, { error: 'machine not found' });
      if (request.method === 'GET' && !action) return send(200, machine);
      if (request.method === 'GET' && action === 'wait') {
        const wanted = url.searchParams.get('state') ?? 'started';
        const deadline = Date.now() + Number(url.searchParams.get('timeout') ?? 60) * 1000;
        while ((machine.state as string) !== wanted && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
        return machine.state === wanted ? send(200, { ok: true }) : send(408, { error: 'deadline_exceeded' });
      }
      if (request.method === 'POST' && action === 'stop') {
        machine.state = 'stopped';
        return send(200, { ok: true });
      }
      if (request.method === 'DELETE') {
        if (machine.state === 'started' && url.searchParams.get('force') !== 'true') return send(412, { error: 'machine is running; stop it or force' });
        machine.state = 'destroyed';
        return send(200, { ok: true });
      }
    }
    return send(404, { error: `no route ${request.method} ${url.pathname}` });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apps, volumes, machines, calls, close: () => new Promise((resolve) => server.close(resolve)) };
}
