// A stand-in of the three model providers for trading agents, over real HTTP in each one's wire format:
// OpenAI chat completions (`/openai/v1/chat/completions`), OpenRouter (the same shape at
// `/openrouter/api/v1/chat/completions`) and Anthropic messages (`/anthropic/v1/messages`). It answers the
// forced tool call with whatever `reply` decides from the request (the prompt's JSON is parsed for it), and
// refuses a wrong key or a request that does not force the decision tool, as the real APIs would refuse
// a malformed one.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Provider = 'openai' | 'anthropic' | 'openrouter';

/** What the stand-in answers: the tool's input, a text answer without a tool call, an HTTP error, after a delay. */
export type Reply = { input: unknown } | { text: string } | { status: number };

export interface Asked {
  provider: Provider;
  model: string;
  /** The user prompt, parsed (llm-agent.ts agentPrompt). */
  prompt: any;
  body: any;
}

export interface ModelStandIn {
  url: string;
  asked: Asked[];
  /** Sets how the next requests are answered. */
  reply: (asked: Asked) => Reply | Promise<Reply>;
  delayMs: number;
  env(): Record<string, string>;
  close(): Promise<void>;
}

export async function startModelStandIn(keys: Record<Provider, string>): Promise<ModelStandIn> {
  const state: ModelStandIn = {
    url: '',
    asked: [],
    reply: () => ({ input: { orders: [], rationale: 'hold' } }),
    delayMs: 0,
    env: () => ({ AGENT_OPENAI_BASE_URL: `${state.url}/openai/v1`, AGENT_ANTHROPIC_BASE_URL: `${state.url}/anthropic/v1`, AGENT_OPENROUTER_BASE_URL: `${state.url}/openrouter/api/v1` }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString());
    const send = (status: number, payload: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    const provider: Provider | null =
      request.url === '/anthropic/v1/messages' ? 'anthropic' : request.url === '/openai/v1/chat/completions' ? 'openai' : request.url === '/openrouter/api/v1/chat/completions' ? 'openrouter' : null;
    if (!provider) return send(404, { error: { message: 'no such route' } });
    const anthropic = provider === 'anthropic';
    const keyOk = anthropic ? request.headers['x-api-key'] === keys.anthropic && request.headers['anthropic-version'] === '2023-06-01' : request.headers.authorization === `Bearer ${keys[provider]}`;
    if (!keyOk) return send(401, anthropic ? { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } } : { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } });
    const toolName = anthropic ? body.tool_choice?.name : body.tool_choice?.function?.name;
    const tool = anthropic ? body.tools?.find((t: any) => t.name === toolName) : body.tools?.find((t: any) => t.function?.name === toolName)?.function;
    if (!toolName || !tool || (anthropic ? !tool.input_schema : !tool.parameters)) return send(400, { error: { message: 'the decision tool must be forced' } });
    const user = anthropic ? body.messages[0].content : body.messages.find((m: any) => m.role === 'user').content;
    const asked: Asked = { provider, model: body.model, prompt: JSON.parse(user), body };
    state.asked.push(asked);
    if (state.delayMs) await new Promise((resolve) => setTimeout(resolve, state.delayMs));
    const reply = await state.reply(asked);
    if ('status' in reply) return send(reply.status, { error: { message: `stand-in error ${reply.status}` } });
    const usage = { input: Buffer.concat(chunks).length, output: 42 };
    if (anthropic) {
      const content = 'input' in reply ? [{ type: 'tool_use', id: 'toolu_1', name: toolName, input: reply.input }] : [{ type: 'text', text: reply.text }];
      return send(200, { id: 'msg_1', type: 'message', role: 'assistant', model: body.model, content, stop_reason: 'input' in reply ? 'tool_use' : 'end_turn', usage: { input_tokens: usage.input, output_tokens: usage.output } });
    }
    const message =
      'input' in reply
        ? { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: toolName, arguments: JSON.stringify(reply.input) } }] }
        : { role: 'assistant', content: reply.text };
    return send(200, { id: 'chatcmpl-1', object: 'chat.completion', model: body.model, choices: [{ index: 0, message, finish_reason: 'input' in reply ? 'tool_calls' : 'stop' }], usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output } });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}
