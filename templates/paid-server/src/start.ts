import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createApp, type AppOptions, type PaidServerApp } from './app.js';
import type { Config } from './config.js';

export interface RunningPaidServer extends PaidServerApp {
  server: Server;
  /** The bound address (PORT 0 picks a free port), e.g. http://127.0.0.1:4021. */
  url: string;
  close(): Promise<void>;
}

/** Creates the app (route check included) and listens; rejects before listening on a mismatch. */
export async function startPaidServer(config: Config, options: AppOptions & { host?: string } = {}): Promise<RunningPaidServer> {
  const built = createApp(config, options);
  const server = options.host ? built.app.listen(config.port, options.host) : built.app.listen(config.port);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  return {
    ...built,
    server,
    url: `http://${options.host ?? 'localhost'}:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** Initializes against the facilitator now; a warning, not a failure, so the seller can start first. */
export async function probeFacilitator(built: PaidServerApp, config: Config): Promise<string> {
  try {
    await built.ready();
    return `facilitator ${config.facilitatorUrl} settles ${config.terms.scheme} on ${config.terms.network}`;
  } catch (error) {
    return `WARNING: facilitator ${config.facilitatorUrl} is not ready (${(error as Error).message}); paid routes answer 503 until it is`;
  }
}
