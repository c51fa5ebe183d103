import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { ListenerName } from '../platform/server-settings.js';
import type { AppContext } from '../context.js';
import type { BackgroundLoop } from '../platform/jobs.js';

/** A Fastify instance whose route schemas are zod schemas (validated and typed). */
export type ZodApp = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, ZodTypeProvider>;

/** What a module contributes: routes per origin, background loops, and cleanup. */
export interface Module {
  name: string;
  /** Routes per origin; `worker` is a worker-only node's listener (/health, /ready, /metrics: the system module's). */
  routes?: Partial<Record<ListenerName, (app: ZodApp) => void | Promise<void>>>;
  loops?: BackgroundLoop[];
  /** Operator commands the CLI runs through the admin socket (or in-process with no instance up). */
  adminCommands?: Record<string, AdminCommand>;
  close?(): Promise<void>;
}

/** Who runs an operator command, and where its audit row (src/admin/commands.ts) files it. */
export interface AdminCall {
  /** The CLI's request id (TOLLGATE_REQUEST_ID, or a new UUID): the audit row and the logs carry it. */
  requestId: string;
  /** The operator's login as the CLI reports it (the admin socket is mode 0600: file permissions authenticate). */
  operator: string;
  /** The command names the project it acted on, for the owner's view of the audit trail. */
  concerns(projectId: string | null): void;
}

export type AdminCommand = (args: Record<string, unknown>, call?: AdminCall) => Promise<unknown>;

export type ModuleFactory = (ctx: AppContext) => Module | Promise<Module>;
