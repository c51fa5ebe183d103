// What every trading route shares: the path prefix, the OpenAPI tags and security, the identity token's user
// and a list's page. The routes are thin: parse (zod) → a service → shape.
import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { principalOf } from '../../../platform/auth/authenticator.js';
import type { listQuery } from '../schemas/common.js';

export const BASE = '/agentic-trading';

export const COMMON = { tags: ['agentic-trading'], security: [{ bearer: [] }] };

/** The signed-in user of a request the identity guard let through. */
export const userOf = (request: FastifyRequest) => principalOf(request, 'identity').userId;

export const pageOf = (query: z.infer<typeof listQuery>) => ({ limit: query.limit, before: query.before ?? null });
