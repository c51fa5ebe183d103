import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import type { Module } from '../module.js';
import { mcpCredentialGuard } from './credential.js';
import { registerWalletTools } from './tools.js';

const INSTRUCTIONS =
  'Tools of one Tollgate wallet (the credential you connected with). pay_and_call pays x402 resources from it within maxPayment and ' +
  "the wallet's spend policy (and, connected through OAuth, the ceiling its owner granted you); get_budget shows what they still allow. " +
  'Amounts are atomic units of the asset (USDG: 6 decimals).';

const jsonRpcError = (code: number, message: string) => JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });

/**
 * `POST {base_url}/mcp` (extension; docs/mcp.md): the Model Context Protocol over Streamable HTTP, for the wallet of
 * a wallet credential or of an OAuth grant (src/modules/oauth). Stateless: each request gets its own server and
 * transport, bound to the credential it proved, and answers in JSON; no session outlives it, so any node answers any request. GET (the server's event
 * stream) and DELETE (ending a session) have nothing to serve: 405, as the SDK's stateless servers answer.
 */
export function mcpModule(ctx: AppContext): Module {
  const credential = mcpCredentialGuard(ctx);
  // pay_and_call forwards a body: room for the largest one after JSON escaping, as the HTTP route allows.
  const bodyLimit = ctx.config.payAndCall.maxBodyBytes * 6 + 64 * 1024;

  return {
    name: 'mcp',
    routes: {
      api: (app) => {
        // Not a REST resource: kept out of the OpenAPI document (its own schemas are the tools').
        app.post('/mcp', { onRequest: credential, bodyLimit, schema: { hide: true } }, async (request, reply) => {
          const server = new McpServer({ name: 'tollgate-wallet', version: '1.0.0' }, { instructions: INSTRUCTIONS });
          registerWalletTools(server, ctx, principalOf(request, 'wallet', 'oauth'), request);
          const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
          // The transport writes the answer itself; what the hooks set so far (x-request-id, CORS) goes with it.
          reply.hijack();
          for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value);
          try {
            await server.connect(transport);
            await transport.handleRequest(request.raw, reply.raw, request.body ?? null);
          } catch (error) {
            request.log.error({ err: error, reqId: request.id }, 'MCP request failed');
            if (!reply.raw.headersSent) reply.raw.writeHead(500, { 'content-type': 'application/json' }).end(jsonRpcError(-32603, 'Internal server error'));
          } finally {
            await server.close();
          }
        });
        for (const method of ['GET', 'DELETE'] as const) {
          app.route({
            method,
            url: '/mcp',
            onRequest: credential,
            schema: { hide: true },
            handler: async (_request, reply) => reply.code(405).header('allow', 'POST').type('application/json').send(jsonRpcError(-32000, 'Method not allowed.')),
          });
        }
      },
    },
  };
}
