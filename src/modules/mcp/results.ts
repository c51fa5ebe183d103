import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import { ApiError } from '../../platform/http/errors.js';
import { redactText } from '../../platform/log-redaction.js';

// What a tool answers: a result (structured content that fits the tool's outputSchema, and the same JSON as text
// for clients that read only text) or a refusal (a tool error, `isError: true`, with `{ reason, rule? }`).

export const refusalSchema = z.looseObject({
  reason: z
    .string()
    .describe('policy_limit_exceeded, policy_per_call_exceeded, policy_host_denied, policy_payto_denied, ceiling_exceeded (an OAuth grant\'s), or the error code the HTTP route answers (docs/mcp.md)'),
  rule: z.string().optional().describe('policy refusals: the rule that refused, e.g. limits[0], maxPerCall, denyHosts[2]; ceiling for the grant\'s ceiling'),
  message: z.string(),
});
export type Refusal = z.infer<typeof refusalSchema>;

type ObjectSchema = z.ZodObject;

/**
 * A tool's outputSchema: one of its results, or a refusal. A refusal must fit it too: the official TypeScript
 * client (1.32.2) checks the structured content of a tool error against the outputSchema as well, while the server
 * skips it (modelcontextprotocol/typescript-sdk#1943), and a client that throws on the check never shows the agent
 * why it was refused. McpServer takes only an object schema, so the advertised JSON Schema is an object whose
 * `anyOf` names each shape; our own results are still checked against their shapes before they leave.
 */
export function toolOutput(...results: [ObjectSchema, ...ObjectSchema[]]) {
  const result = results.length === 1 ? results[0] : z.union(results);
  return z
    .looseObject({})
    .superRefine((value, ctx) => {
      const parsed = result.safeParse(value);
      if (!parsed.success) ctx.addIssue({ code: 'custom', message: z.prettifyError(parsed.error) });
    })
    .meta({ anyOf: [...results, refusalSchema].map(jsonSchemaOf) });
}

/** One shape as it nests in the advertised schema (the SDK advertises draft-7; `$schema` belongs at the root only). */
function jsonSchemaOf(schema: ObjectSchema): Record<string, unknown> {
  const { $schema: _root, ...json } = z.toJSONSchema(schema, { target: 'draft-7', io: 'output' });
  return json;
}

/** A successful tool result: the structured content and its JSON as text, plus what an agent should do next. */
export function answered(structured: Record<string, unknown>, note?: string): CallToolResult {
  const text = JSON.stringify(structured);
  return { structuredContent: structured, content: [{ type: 'text', text: note ? `${note}\n${text}` : text }] };
}

/**
 * A failure as a tool error. An ApiError the services threw is a refusal the agent can act on: its code is the
 * `reason`, its details ride along (a policy refusal's `rule`, the budget, the offers above maxPayment; a detail's
 * own `reason` becomes `cause`). Anything else is said only as `internal_error`. As the HTTP API does, what would
 * be a 5xx there goes to the request's log (its `reqId` comes with it). The message is redacted as an HTTP error
 * answer's is (errorBody): a quoted URL keeps its host only.
 */
export function refused(error: unknown, log: FastifyBaseLogger): CallToolResult {
  if (!(error instanceof ApiError) || error.status >= 500) log.error({ err: error }, 'MCP tool failed');
  if (!(error instanceof ApiError)) return refusal({ reason: 'internal_error', message: 'Internal server error' });
  const details = isRecord(error.details) ? error.details : error.details === undefined ? {} : { details: error.details };
  const { reason: cause, ...rest } = details;
  return refusal({ ...rest, ...(cause !== undefined && cause !== error.code ? { cause } : {}), reason: error.code, message: redactText(error.message) });
}

function refusal(structured: Refusal): CallToolResult {
  return { isError: true, structuredContent: structured, content: [{ type: 'text', text: `${structured.message}\n${JSON.stringify(structured)}` }] };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
