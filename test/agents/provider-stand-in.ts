// Stand-ins of the three model providers' chat APIs for tests and benches, over real HTTP in each one's own
// wire format, streamed or not: OpenAI chat completions (`/openai/v1/chat/completions`), OpenRouter (the same
// shape at `/openrouter/api/v1/chat/completions`, with its SSE comment lines) and Anthropic messages
// (`/anthropic/v1/messages`, its message stream events). Each answers "<provider> says: <last text>" and
// refuses an unknown key as the real API does; streams go out word by word.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  bytes: number;
}

export interface ProviderStandInOptions {
  keys: Record<'openai' | 'anthropic' | 'openrouter', string>;
  /** Tokens reported for a request of `bytes` (default 10 in, 3 out). */
  usage?: (body: any, bytes: number) => { input: number; output: number } | Promise<{ input: number; output: number }>;
  /** Waits this long before answering (a slow provider). */
  delayMs?: number;
  /** Waits this long between streamed words. */
  wordDelayMs?: number;
}

const lastText = (body: any): string => {
  const last = body.messages.at(-1);
  return typeof last.content === 'string' ? last.content : JSON.stringify(last.content);
};

export async function startProviderStandIn(options: ProviderStandInOptions) {
  const received: Received[] = [];
  const usageOf = options.usage ?? (() => ({ input: 10, output: 3 }));
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString());
    received.push({ path: request.url!, headers: request.headers, body, bytes: Buffer.concat(chunks).length });
    if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
    const reply = (status: number, payload: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    const events = () => response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const usage = await usageOf(body, Buffer.concat(chunks).length);
    const pause = () => new Promise((resolve) => setTimeout(resolve, options.wordDelayMs ?? 0));
    if (request.url === '/anthropic/v1/messages') {
      if (request.headers['x-api-key'] !== options.keys.anthropic || request.headers['anthropic-version'] !== '2023-06-01') {
        return reply(401, { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });
      }
      const text = `anthropic says: ${lastText(body)}`;
      if (!body.stream) {
        return reply(200, { id: 'msg_1', type: 'message', role: 'assistant', model: body.model, content: [{ type: 'text', text }], stop_reason: 'end_turn', usage: { input_tokens: usage.input, output_tokens: usage.output } });
      }
      events();
      const send = (type: string, data: object) => response.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      send('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, usage: { input_tokens: usage.input, output_tokens: 1 } } });
      send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
      send('ping', {});
      for (const word of text.split(/(?<= )/)) {
        send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: word } });
        await pause();
      }
      send('content_block_stop', { index: 0 });
      send('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: usage.output } });
      send('message_stop', {});
      return response.end();
    }
    const provider = request.url === '/openai/v1/chat/completions' ? 'openai' : request.url === '/openrouter/api/v1/chat/completions' ? 'openrouter' : null;
    if (!provider) return reply(404, { error: { message: 'unknown route' } });
    if (request.headers.authorization !== `Bearer ${options.keys[provider]}`) {
      return reply(401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } });
    }
    const text = `${provider} says: ${lastText(body)}`;
    const counted = { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output };
    if (!body.stream) {
      return reply(200, { id: 'chatcmpl-1', object: 'chat.completion', model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: counted });
    }
    events();
    const chunk = (choices: unknown[], extra: object = {}) => response.write(`data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', model: body.model, choices, ...extra })}\n\n`);
    if (provider === 'openrouter') response.write(': OPENROUTER PROCESSING\n\n');
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
    for (const word of text.split(/(?<= )/)) {
      chunk([{ index: 0, delta: { content: word }, finish_reason: null }]);
      await pause();
    }
    chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]);
    if (body.stream_options?.include_usage) chunk([], { usage: counted });
    response.end('data: [DONE]\n\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    received,
    base,
    /** The service's settings that point its runtimes here. */
    env: { AGENT_OPENAI_BASE_URL: `${base}/openai/v1`, AGENT_ANTHROPIC_BASE_URL: `${base}/anthropic/v1`, AGENT_OPENROUTER_BASE_URL: `${base}/openrouter/api/v1` },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
