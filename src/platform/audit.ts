// The audit trail: one append-only row for every operator command (the CLI, through the admin socket or
// in-process) and every credential or key change through the API: when (the database's clock), who (the
// principal's kind and id, never a secret), what, the target, the request id, and the outcome.
//
// Routes opt in with `config: { audit: { action } }`: one hook writes their row before the answer leaves,
// so a caller that has its answer finds the row. Operator commands are audited where they are dispatched
// (src/admin/commands.ts), every command but the reads. The rows are never changed: this file has no update
// or delete, and the migration's triggers refuse UPDATE, DELETE and TRUNCATE on the table outright.
import { and, desc, eq, gte, lt, type SQL } from 'drizzle-orm';
import type { FastifyRequest, onSendHookHandler } from 'fastify';
import type { Logger } from 'pino';
import type { Principal } from './auth/principal.js';
import type { Db } from './db.js';
import { auditLog } from './tables.js';

export interface AuditActor {
  /** `operator`, or the API caller's credential kind. */
  kind: string;
  id: string;
}

export interface AuditEntry {
  action: string;
  actor: AuditActor;
  target: string | null;
  projectId: string | null;
  requestId: string;
  via: 'api' | 'cli';
  outcome: 'ok' | 'refused' | 'error';
  status?: number | null;
  detail?: Record<string, string | number | boolean | null>;
}

export interface AuditRecord extends Omit<AuditEntry, 'status' | 'detail'> {
  seq: number;
  at: string;
  status: number | null;
  detail: Record<string, unknown> | null;
}

export interface AuditQuery {
  since?: Date;
  target?: string;
  projectId?: string;
  /** Rows before this sequence number (paging, newest first). */
  before?: number;
  limit: number;
}

/** The principal as the trail names it: its kind and the id of the user or credential, never the secret. */
export function actorOf(principal: Principal): AuditActor {
  switch (principal.kind) {
    case 'identity':
      return { kind: 'identity', id: principal.userId };
    case 'project_key':
      return { kind: 'project_key', id: principal.keyId };
    default:
      return { kind: principal.kind, id: principal.credentialId };
  }
}

export class AuditLog {
  constructor(
    private readonly db: Db,
    private readonly log: Logger,
  ) {}

  /**
   * Appends one row. The action has happened by now: a failed write is logged with the whole entry (so the
   * trail survives in the logs) and does not turn the action's answer into an error.
   */
  async record(entry: AuditEntry): Promise<void> {
    // The same facts as a log line too, for whoever ships logs to a SIEM.
    this.log.info({ audit: entry }, 'audit');
    try {
      await this.db.insert(auditLog).values({
        actorKind: entry.actor.kind,
        actorId: entry.actor.id,
        action: entry.action,
        target: entry.target,
        projectId: entry.projectId,
        requestId: entry.requestId,
        via: entry.via,
        outcome: entry.outcome,
        status: entry.status ?? null,
        detail: entry.detail ?? null,
      });
    } catch (error) {
      this.log.error({ err: error, audit: entry }, 'audit row not written');
    }
  }

  /** Newest first. */
  async list(query: AuditQuery): Promise<AuditRecord[]> {
    const where: SQL[] = [];
    if (query.since) where.push(gte(auditLog.at, query.since));
    if (query.target) where.push(eq(auditLog.target, query.target));
    if (query.projectId) where.push(eq(auditLog.projectId, query.projectId));
    if (query.before !== undefined) where.push(lt(auditLog.seq, query.before));
    const rows = await this.db
      .select()
      .from(auditLog)
      .where(where.length ? and(...where) : undefined)
      .orderBy(desc(auditLog.seq))
      .limit(query.limit);
    return rows.map((row) => ({
      seq: Number(row.seq),
      at: row.at.toISOString(),
      action: row.action,
      actor: { kind: row.actorKind, id: row.actorId },
      target: row.target,
      projectId: row.projectId,
      requestId: row.requestId,
      via: row.via as AuditEntry['via'],
      outcome: row.outcome as AuditEntry['outcome'],
      status: row.status,
      detail: row.detail as Record<string, unknown> | null,
    }));
  }
}

/** What an audited route's hook knows when it names the target. */
export interface AuditedCall {
  params: Record<string, string>;
  /** The request's body: a target may be named in it. Never copied into a row (it may hold a secret). */
  body: unknown;
  /** The answer's JSON (for a create: what was made), or null. */
  answer: unknown;
}

export interface AuditRouteConfig {
  action: string;
  /**
   * The id acted on. Default: the answer's `data.id` (what a create made, or the thing changed), else the
   * route's last path parameter.
   */
  target?: (call: AuditedCall) => string | null | undefined;
  /** The project concerned. Default: the route's `projectId` parameter, or a project key's own project. */
  project?: (call: AuditedCall) => string | null | undefined;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Writes an audit row for every call of this route made with a credential (src/platform/audit.ts). */
    audit?: AuditRouteConfig;
  }
}

const dataOf = (answer: unknown): Record<string, unknown> | null => {
  const data = (answer as { data?: unknown } | null)?.data;
  return data && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>) : null;
};

const defaultTarget = ({ params, answer }: AuditedCall): string | null => {
  const id = dataOf(answer)?.id;
  if (typeof id === 'string') return id;
  const values = Object.values(params);
  return values.length ? values[values.length - 1]! : null;
};

/** The error code an answer names: the envelope's numeric code, or the string code of the other families. */
function errorCodeOf(answer: unknown): string | null {
  if (!answer || typeof answer !== 'object') return null;
  const body = answer as { code?: unknown; error?: { code?: unknown }; data?: { reason?: unknown } | null };
  const reason = body.data && typeof body.data === 'object' ? body.data.reason : undefined;
  const code = typeof reason === 'string' ? reason : (body.error?.code ?? body.code);
  return typeof code === 'string' || typeof code === 'number' ? String(code) : null;
}

/**
 * Writes the row of every audited route's call that came with a credential, before its answer is sent. A
 * call refused before a principal was known (no or a bad credential: 401) leaves none: it acted as nobody,
 * and anyone could fill the trail with them (the request metrics count them). An onSend hook for the routes
 * whose config has `audit` only (route-hooks.ts adds it): other routes pay nothing for it.
 */
export function auditOnSend(audit: AuditLog, config: AuditRouteConfig): onSendHookHandler {
  return async (request: FastifyRequest, reply, payload) => {
    if (!request.principal) return payload;
    let answer: unknown = null;
    if (typeof payload === 'string') {
      try {
        answer = JSON.parse(payload);
      } catch {
        answer = null;
      }
    }
    const params = (request.params ?? {}) as Record<string, string>;
    const status = reply.statusCode;
    const principal = request.principal;
    const target = (config.target ?? defaultTarget)({ params, body: request.body, answer }) ?? null;
    const code = status >= 400 ? errorCodeOf(answer) : null;
    await audit.record({
      action: config.action,
      actor: actorOf(principal),
      target,
      projectId: config.project?.({ params, body: request.body, answer }) ?? params.projectId ?? (principal.kind === 'project_key' ? principal.projectId : null),
      requestId: request.id,
      via: 'api',
      outcome: status < 400 ? 'ok' : status < 500 ? 'refused' : 'error',
      status,
      detail: { route: `${request.method} ${request.routeOptions.url}`, ...(code ? { code } : {}) },
    });
    return payload;
  };
}
