import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { OriginName } from '../config.js';
import type { AppContext } from '../context.js';
import type { BackgroundLoop } from '../platform/jobs.js';

/** A Fastify instance whose route schemas are zod schemas (validated and typed). */
export type ZodApp = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, ZodTypeProvider>;

/** What a module contributes: routes per origin, background loops, and cleanup. */
export interface Module {
  name: string;
  routes?: Partial<Record<OriginName, (app: ZodApp) => void | Promise<void>>>;
  loops?: BackgroundLoop[];
  /** Operator commands the CLI runs through the admin socket (or in-process with no instance up). */
  adminCommands?: Record<string, AdminCommand>;
  close?(): Promise<void>;
}

export type AdminCommand = (args: Record<string, unknown>) => Promise<unknown>;

export type ModuleFactory = (ctx: AppContext) => Module | Promise<Module>;
