// The load balancer in front of the api nodes, as a deployment has one: PUBLIC_BASE_URL names it, so every
// link the service hands out (an intent's paymentUrl, an upload's resource URL, the ping pay-and-call
// reaches) is the same whichever node answers. Each request goes to a node the chaos loop reports up,
// round robin; a node that dies under a request drops the client's connection, as a real balancer does
// (the client sees a lost answer, never a made-up status).
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Balancer {
  origin: string;
  /** host:port, for PAY_AND_CALL_ALLOW_HOSTS. */
  host: string;
  setTargets(targets: () => string[]): void;
  close(): Promise<void>;
}

export async function startBalancer(): Promise<Balancer> {
  let targets: () => string[] = () => [];
  let turn = 0;
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const live = targets();
    if (live.length === 0) {
      // No node up: what a balancer whose health checks all fail answers.
      res.writeHead(503, { 'content-type': 'application/json', connection: 'close' });
      res.end(JSON.stringify({ code: 1012, message: 'no api node is up', data: null }));
      return;
    }
    const target = new URL(live[turn++ % live.length]!);
    const upstream = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent: false },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
        answer.on('aborted', () => res.destroy());
        answer.on('error', () => res.destroy());
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    setTargets: (next) => (targets = next),
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
