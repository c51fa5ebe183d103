// The provider wires against a local stand-in of each provider that answers in its real format, streamed
// answers written in small pieces that split lines (and \r\n pairs) mid-way, and checks what it was sent.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TokenBudget } from './budget.js';
import type { Entry, Gate, ProviderCall, TokenAsk, Tool } from './model-types.js';
import { converse, estimateInputTokens, loadTokenizer, MIN_OUTPUT_TOKENS } from './models.js';
import { traitsOf } from './model-traits.js';
import { ProviderError } from './wire.js';
import { serverSentEvents } from './sse.js';

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The request body's bytes, as sent. */
  bytes: number;
  body: any;
}
type Answer = (response: http.ServerResponse, body: any) => void | Promise<void>;

const received: Received[] = [];
/** What the stand-in answers next, one per request, in order. */
const answers: Answer[] = [];
const server = http.createServer(async (request, response) => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  const body = JSON.parse(raw.toString('utf8'));
  received.push({ path: request.url!, headers: request.headers, bytes: raw.length, body });
  const answer = answers.shift();
  if (!answer) return response.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"the test scripted no answer"}');
  await answer(response, body);
});
let base = '';

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});
beforeEach(() => {
  received.length = 0;
  answers.length = 0;
});

const providers = {
  openai: () => ({ name: 'openai', apiKey: 'sk-openai-test', baseUrl: `${base}/openai/v1`, model: 'gpt-4o-mini-2024-07-18' }) satisfies ProviderCall,
  anthropic: () => ({ name: 'anthropic', apiKey: 'sk-ant-test', baseUrl: `${base}/anthropic/v1`, model: 'claude-3-5-haiku-20241022' }) satisfies ProviderCall,
  openrouter: () => ({ name: 'openrouter', apiKey: 'sk-or-test', baseUrl: `${base}/openrouter/api/v1`, model: 'openai/gpt-4o-mini' }) satisfies ProviderCall,
};

const json =
  (payload: unknown, status = 200): Answer =>
  (response) =>
    void response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));

/** An event stream written 7 bytes at a time with a pause between writes, so lines arrive split between reads. */
const stream =
  (text: string, { complete = true } = {}): Answer =>
  async (response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    response.socket?.setNoDelay(true);
    const bytes = Buffer.from(text);
    for (let i = 0; i < bytes.length; i += 7) {
      response.write(bytes.subarray(i, i + 7));
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    if (complete) response.end();
    else response.destroy();
  };

const openAiChunks = (frames: object[], { comments = false, crlf = false } = {}) => {
  const nl = crlf ? '\r\n' : '\n';
  const prefix = comments ? `: OPENROUTER PROCESSING${nl}${nl}: OPENROUTER PROCESSING${nl}${nl}` : '';
  return prefix + [...frames.map((frame) => `data: ${JSON.stringify(frame)}`), 'data: [DONE]'].map((line) => `${line}${nl}${nl}`).join('');
};
const chunk = (choice: object | null, usage?: object) => ({
  id: 'chatcmpl-9',
  object: 'chat.completion.chunk',
  created: 1_700_000_000,
  model: 'gpt-4o-mini-2024-07-18',
  system_fingerprint: 'fp_1',
  choices: choice ? [{ index: 0, logprobs: null, finish_reason: null, ...choice }] : [],
  ...(usage ? { usage } : {}),
});
const anthropicEvents = (events: Array<[string, object]>, { crlf = false } = {}) => {
  const nl = crlf ? '\r\n' : '\n';
  return events.map(([event, data]) => `event: ${event}${nl}data: ${JSON.stringify({ type: event, ...data })}${nl}${nl}`).join('');
};

/** A gate that lets every call through and records what it was asked to reserve. */
function openGate() {
  const estimates: TokenAsk[] = [];
  const gate: Gate = async (ask, run) => {
    estimates.push(ask);
    return run(ask.maxOutput);
  };
  return { gate, estimates };
}

/** A pay_and_call-like tool that records its inputs. */
function payTool() {
  const inputs: Array<Record<string, unknown>> = [];
  const tool: Tool = {
    name: 'pay_and_call',
    description: 'Call an HTTP resource and pay its x402 price.',
    parameters: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] },
    async run(input) {
      inputs.push(input);
      if (input.url === 'https://fails.example') throw new Error('the wallet is empty');
      return JSON.stringify({ status: 200, body: `weather at ${String(input.url)}: sunny`, payment: { amount: '1000' } });
    },
  };
  return { tool, inputs };
}

const sampling = { maxOutputTokens: 300, temperature: 0.2 };
const transcript: Entry[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Say hi' },
];

// No database: provider stand-ins over HTTP. The PostgreSQL pass would run it again unchanged.
const noDatabaseTestOnPostgresPass = Boolean(process.env.DATABASE_URL);

describe.skipIf(noDatabaseTestOnPostgresPass)('server-sent events', () => {
  const text = 'event: first\r\ndata: {"a":"é👋"}\r\n\r\n: a comment\n\nid: 1\ndata: line one\ndata: line two\n\rdata:no space\r\rdata: unfinished\n';
  const expected = [
    { event: 'first', data: '{"a":"é👋"}' },
    { event: 'message', data: 'line one\nline two' },
    { event: 'message', data: 'no space' },
  ];
  async function read(pieces: Uint8Array[]) {
    const events = [];
    for await (const event of serverSentEvents((async function* () {
      yield* pieces;
    })())) events.push(event);
    return events;
  }

  it('reads the same events wherever the bytes are split, \\r\\n pairs and UTF-8 characters included', async () => {
    const bytes = Buffer.from(text);
    expect(await read([bytes])).toEqual(expected);
    for (let cut = 1; cut < bytes.length; cut += 1) expect(await read([bytes.subarray(0, cut), bytes.subarray(cut)]), `cut at ${cut}`).toEqual(expected);
    expect(await read([...bytes].map((byte) => Uint8Array.of(byte)))).toEqual(expected);
  });
});

describe.skipIf(noDatabaseTestOnPostgresPass)('estimateInputTokens', () => {
  it("counts a request's JSON (its output cap left out) with a tokenizer, not a token per byte; foreign tokenizers get a margin", async () => {
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 1024 };
    const counted = (await loadTokenizer())(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }));
    expect(await estimateInputTokens(body, 1)).toBe(counted);
    expect(counted).toBeLessThan(Buffer.byteLength(JSON.stringify(body)) / 2);
    expect(await estimateInputTokens(body, 1.3)).toBe(Math.ceil(counted * 1.3));
    // The provider's own count of the same request is below ours (the stand-ins report 12–25 for a longer one).
    expect(counted).toBeGreaterThan(3);
  });
});

describe.skipIf(noDatabaseTestOnPostgresPass)('plain answers', () => {
  it('OpenAI without streaming: its body, headers and answer', async () => {
    const answer = {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: 'gpt-4o-mini-2024-07-18',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 12, completion_tokens: 2, total_tokens: 14 },
    };
    answers.push(json(answer));
    const outcome = await converse({ provider: providers.openai(), transcript, tools: [], sampling, gate: openGate().gate });
    expect(received).toHaveLength(1);
    expect(received[0]!.path).toBe('/openai/v1/chat/completions');
    expect(received[0]!.headers.authorization).toBe('Bearer sk-openai-test');
    expect(received[0]!.headers['x-title']).toBeUndefined();
    expect(received[0]!.body).toEqual({
      model: 'gpt-4o-mini-2024-07-18',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Say hi' },
      ],
      max_tokens: 300,
      temperature: 0.2,
    });
    expect(outcome).toEqual({ text: 'Hi.', raw: answer, entries: [{ role: 'assistant', content: 'Hi.' }], usage: { inputTokens: 12, outputTokens: 2 } });
  });

  it('OpenAI streaming: deltas as they come, the answer rebuilt in its non-streaming shape', async () => {
    answers.push(
      stream(
        openAiChunks(
          [
            chunk({ delta: { role: 'assistant', content: '' } }),
            chunk({ delta: { content: 'Hel' } }),
            chunk({ delta: { content: 'lo, ' } }),
            chunk({ delta: { content: 'wörld 👋' } }),
            chunk({ delta: {}, finish_reason: 'stop' }),
            chunk(null, { prompt_tokens: 15, completion_tokens: 5, total_tokens: 20 }),
          ],
          { crlf: true },
        ),
      ),
    );
    const deltas: string[] = [];
    const outcome = await converse({ provider: providers.openai(), transcript, tools: [], sampling: { maxOutputTokens: 50 }, gate: openGate().gate, onDelta: (text) => deltas.push(text) });
    expect(received[0]!.body).toMatchObject({ model: 'gpt-4o-mini-2024-07-18', max_tokens: 50, stream: true, stream_options: { include_usage: true } });
    expect(received[0]!.body).not.toHaveProperty('temperature');
    expect(deltas).toEqual(['Hel', 'lo, ', 'wörld 👋']);
    expect(outcome!.text).toBe('Hello, wörld 👋');
    expect(outcome!.entries).toEqual([{ role: 'assistant', content: 'Hello, wörld 👋' }]);
    expect(outcome!.usage).toEqual({ inputTokens: 15, outputTokens: 5 });
    expect(outcome!.raw).toEqual({
      id: 'chatcmpl-9',
      object: 'chat.completion',
      model: 'gpt-4o-mini-2024-07-18',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello, wörld 👋' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 15, completion_tokens: 5, total_tokens: 20 },
    });
  });

  it('Anthropic without streaming: system apart, its headers, no temperature unless set', async () => {
    const answer = {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-3-5-haiku-20241022',
      content: [{ type: 'text', text: 'Hi.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 20, output_tokens: 3 },
    };
    answers.push(json(answer));
    const twoSystems: Entry[] = [{ role: 'system', content: 'Be kind.' }, ...transcript];
    const outcome = await converse({ provider: providers.anthropic(), transcript: twoSystems, tools: [], sampling: { maxOutputTokens: 64 }, gate: openGate().gate });
    expect(received[0]!.path).toBe('/anthropic/v1/messages');
    expect(received[0]!.headers['x-api-key']).toBe('sk-ant-test');
    expect(received[0]!.headers['anthropic-version']).toBe('2023-06-01');
    expect(received[0]!.body).toEqual({ model: 'claude-3-5-haiku-20241022', max_tokens: 64, system: 'Be kind.\n\nYou are terse.', messages: [{ role: 'user', content: 'Say hi' }] });
    expect(outcome).toEqual({ text: 'Hi.', raw: answer, entries: [{ role: 'assistant', content: 'Hi.' }], usage: { inputTokens: 20, outputTokens: 3 } });
  });

  it('Anthropic streaming: text deltas, pings ignored, the message rebuilt', async () => {
    answers.push(
      stream(
        anthropicEvents([
          ['message_start', { message: { id: 'msg_2', type: 'message', role: 'assistant', model: 'claude-3-5-haiku-20241022', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 25, output_tokens: 1 } } }],
          ['content_block_start', { index: 0, content_block: { type: 'text', text: '' } }],
          ['ping', {}],
          ['content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello' } }],
          ['content_block_delta', { index: 0, delta: { type: 'text_delta', text: ' there' } }],
          ['content_block_stop', { index: 0 }],
          ['message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 7 } }],
          ['message_stop', {}],
        ]),
      ),
    );
    const deltas: string[] = [];
    const outcome = await converse({ provider: providers.anthropic(), transcript, tools: [], sampling, gate: openGate().gate, onDelta: (text) => deltas.push(text) });
    expect(received[0]!.body).toMatchObject({ model: 'claude-3-5-haiku-20241022', max_tokens: 300, temperature: 0.2, system: 'You are terse.', stream: true });
    expect(deltas).toEqual(['Hello', ' there']);
    expect(outcome!.text).toBe(deltas.join(''));
    expect(outcome!.usage).toEqual({ inputTokens: 25, outputTokens: 7 });
    expect(outcome!.raw).toEqual({
      id: 'msg_2',
      type: 'message',
      role: 'assistant',
      model: 'claude-3-5-haiku-20241022',
      content: [{ type: 'text', text: 'Hello there' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 25, output_tokens: 7 },
    });
  });

  it('OpenRouter without streaming: the OpenAI shape at its own URL, with its title header', async () => {
    answers.push(json({ id: 'gen-1', object: 'chat.completion', model: 'openai/gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'Hey' }, finish_reason: 'stop' }], usage: { prompt_tokens: 9, completion_tokens: 1, total_tokens: 10 } }));
    const outcome = await converse({ provider: providers.openrouter(), transcript, tools: [], sampling, gate: openGate().gate });
    expect(received[0]!.path).toBe('/openrouter/api/v1/chat/completions');
    expect(received[0]!.headers.authorization).toBe('Bearer sk-or-test');
    expect(received[0]!.headers['x-title']).toBe('Tollgate agent');
    expect(received[0]!.body.model).toBe('openai/gpt-4o-mini');
    expect(outcome!.text).toBe('Hey');
    expect(outcome!.usage).toEqual({ inputTokens: 9, outputTokens: 1 });
  });

  it("OpenRouter streaming: its comment lines ignored", async () => {
    answers.push(
      stream(
        openAiChunks(
          [chunk({ delta: { role: 'assistant', content: 'Good ' } }), chunk({ delta: { content: 'day' }, finish_reason: 'stop' }), chunk(null, { prompt_tokens: 8, completion_tokens: 2, total_tokens: 10 })],
          { comments: true },
        ),
      ),
    );
    const deltas: string[] = [];
    const outcome = await converse({ provider: providers.openrouter(), transcript, tools: [], sampling, gate: openGate().gate, onDelta: (text) => deltas.push(text) });
    expect(received[0]!.headers['x-title']).toBe('Tollgate agent');
    expect(deltas).toEqual(['Good ', 'day']);
    expect(outcome!.text).toBe('Good day');
    expect(outcome!.usage).toEqual({ inputTokens: 8, outputTokens: 2 });
  });
});

describe.skipIf(noDatabaseTestOnPostgresPass)('a tool round', () => {
  const asks: Entry[] = [{ role: 'system', content: 'You pay for data.' }, { role: 'user', content: 'Weather?' }];
  const toolResult = JSON.stringify({ status: 200, body: 'weather at https://weather.example: sunny', payment: { amount: '1000' } });

  describe.each([false, true])('OpenAI (streaming: %s)', (streaming) => {
    it('runs the tool the model asks for, sends its result back, and ends with the answer', async () => {
      const callAnswer = {
        id: 'chatcmpl-a',
        object: 'chat.completion',
        model: 'gpt-4o-mini-2024-07-18',
        choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'pay_and_call', arguments: '{"url":"https://weather.example"}' } }] }, finish_reason: 'tool_calls' }],
        usage: { prompt_tokens: 40, completion_tokens: 10, total_tokens: 50 },
      };
      const textAnswer = {
        id: 'chatcmpl-b',
        object: 'chat.completion',
        model: 'gpt-4o-mini-2024-07-18',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Sunny.' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 70, completion_tokens: 3, total_tokens: 73 },
      };
      if (streaming) {
        answers.push(
          stream(
            openAiChunks([
              { ...chunk({ delta: { role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'pay_and_call', arguments: '' } }] } }), id: 'chatcmpl-a' },
              chunk({ delta: { tool_calls: [{ index: 0, function: { arguments: '{"url":"ht' } }] } }),
              chunk({ delta: { tool_calls: [{ index: 0, function: { arguments: 'tps://weather.example"}' } }] } }),
              chunk({ delta: {}, finish_reason: 'tool_calls' }),
              chunk(null, callAnswer.usage),
            ]),
          ),
          stream(openAiChunks([{ ...chunk({ delta: { role: 'assistant', content: 'Sun' } }), id: 'chatcmpl-b' }, chunk({ delta: { content: 'ny.' }, finish_reason: 'stop' }), chunk(null, textAnswer.usage)])),
        );
      } else answers.push(json(callAnswer), json(textAnswer));
      const { tool, inputs } = payTool();
      const { gate, estimates } = openGate();
      const deltas: string[] = [];
      const outcome = await converse({ provider: providers.openai(), transcript: asks, tools: [tool], sampling, gate, ...(streaming ? { onDelta: (text: string) => deltas.push(text) } : {}) });

      expect(inputs).toEqual([{ url: 'https://weather.example' }]);
      expect(received).toHaveLength(2);
      const offered = [{ type: 'function', function: { name: 'pay_and_call', description: tool.description, parameters: tool.parameters } }];
      expect(received[0]!.body.tools).toEqual(offered);
      expect(received[1]!.body.tools).toEqual(offered);
      expect(received[1]!.body.messages).toEqual([
        { role: 'system', content: 'You pay for data.' },
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'pay_and_call', arguments: '{"url":"https://weather.example"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: toolResult },
      ]);
      expect(outcome!.entries).toEqual([
        { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'pay_and_call', input: { url: 'https://weather.example' } }] },
        { role: 'tool', toolCallId: 'call_1', name: 'pay_and_call', content: toolResult },
        { role: 'assistant', content: 'Sunny.' },
      ]);
      expect(outcome!.text).toBe('Sunny.');
      expect(outcome!.usage).toEqual({ inputTokens: 110, outputTokens: 13 });
      expect(outcome!.raw).toEqual(textAnswer);
      if (streaming) expect(deltas.join('')).toBe('Sunny.');
      // Each round reserved its request as the tokenizer counts it, and its whole output.
      expect(estimates).toHaveLength(2);
      for (const [i, ask] of estimates.entries()) expect(ask).toEqual({ input: await estimateInputTokens(received[i]!.body, 1), maxOutput: sampling.maxOutputTokens, minOutput: MIN_OUTPUT_TOKENS });
    });
  });

  describe.each([false, true])('Anthropic (streaming: %s)', (streaming) => {
    it('runs both tools the model asks for and answers their results in one user message of tool_result blocks', async () => {
      const uses = [
        { type: 'tool_use', id: 'toolu_1', name: 'pay_and_call', input: { url: 'https://weather.example' } },
        { type: 'tool_use', id: 'toolu_2', name: 'pay_and_call', input: { url: 'https://fails.example' } },
      ];
      const callAnswer = { id: 'msg_a', type: 'message', role: 'assistant', model: 'claude-3-5-haiku-20241022', content: [{ type: 'text', text: 'Let me pay.' }, ...uses], stop_reason: 'tool_use', usage: { input_tokens: 50, output_tokens: 30 } };
      const textAnswer = { id: 'msg_b', type: 'message', role: 'assistant', model: 'claude-3-5-haiku-20241022', content: [{ type: 'text', text: 'Sunny; the other failed.' }], stop_reason: 'end_turn', usage: { input_tokens: 90, output_tokens: 8 } };
      const start = (message: { id: string; usage: { input_tokens: number } }): [string, object] => [
        'message_start',
        { message: { id: message.id, type: 'message', role: 'assistant', model: 'claude-3-5-haiku-20241022', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: message.usage.input_tokens, output_tokens: 1 } } },
      ];
      if (streaming) {
        answers.push(
          stream(
            anthropicEvents(
              [
                start(callAnswer),
                ['content_block_start', { index: 0, content_block: { type: 'text', text: '' } }],
                ['content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Let me pay.' } }],
                ['content_block_stop', { index: 0 }],
                ['content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'pay_and_call', input: {} } }],
                ['content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '' } }],
                ['content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"url": "https://wea' } }],
                ['content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: 'ther.example"}' } }],
                ['content_block_stop', { index: 1 }],
                ['ping', {}],
                ['content_block_start', { index: 2, content_block: { type: 'tool_use', id: 'toolu_2', name: 'pay_and_call', input: {} } }],
                ['content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '{"url": "https://fails.example"}' } }],
                ['content_block_stop', { index: 2 }],
                ['message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 30 } }],
                ['message_stop', {}],
              ],
              { crlf: true },
            ),
          ),
          stream(
            anthropicEvents([
              start(textAnswer),
              ['content_block_start', { index: 0, content_block: { type: 'text', text: '' } }],
              ['content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Sunny; ' } }],
              ['content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'the other failed.' } }],
              ['content_block_stop', { index: 0 }],
              ['message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 8 } }],
              ['message_stop', {}],
            ]),
          ),
        );
      } else answers.push(json(callAnswer), json(textAnswer));
      const { tool, inputs } = payTool();
      const { gate, estimates } = openGate();
      const deltas: string[] = [];
      const outcome = await converse({ provider: providers.anthropic(), transcript: asks, tools: [tool], sampling, gate, ...(streaming ? { onDelta: (text: string) => deltas.push(text) } : {}) });

      expect(inputs).toEqual([{ url: 'https://weather.example' }, { url: 'https://fails.example' }]);
      expect(received).toHaveLength(2);
      const offered = [{ name: 'pay_and_call', description: tool.description, input_schema: tool.parameters }];
      expect(received[1]!.body).toEqual({
        model: 'claude-3-5-haiku-20241022',
        max_tokens: 300,
        temperature: 0.2,
        system: 'You pay for data.',
        messages: [
          { role: 'user', content: 'Weather?' },
          { role: 'assistant', content: [{ type: 'text', text: 'Let me pay.' }, ...uses] },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_1', content: toolResult },
              { type: 'tool_result', tool_use_id: 'toolu_2', content: JSON.stringify({ error: 'the wallet is empty' }) },
            ],
          },
        ],
        tools: offered,
        ...(streaming ? { stream: true } : {}),
      });
      expect(outcome!.entries).toEqual([
        { role: 'assistant', content: 'Let me pay.', toolCalls: uses.map(({ id, name, input }) => ({ id, name, input })) },
        { role: 'tool', toolCallId: 'toolu_1', name: 'pay_and_call', content: toolResult },
        { role: 'tool', toolCallId: 'toolu_2', name: 'pay_and_call', content: '{"error":"the wallet is empty"}' },
        { role: 'assistant', content: 'Sunny; the other failed.' },
      ]);
      expect(outcome!.usage).toEqual({ inputTokens: 140, outputTokens: 38 });
      expect(outcome!.raw).toEqual(textAnswer);
      if (streaming) expect(deltas.join('')).toBe('Let me pay.Sunny; the other failed.');
      for (const [i, ask] of estimates.entries()) expect(ask).toEqual({ input: await estimateInputTokens(received[i]!.body, 1.3), maxOutput: sampling.maxOutputTokens, minOutput: MIN_OUTPUT_TOKENS });
    });
  });

  it('Anthropic continues a transcript whose tool round OpenAI made', async () => {
    const stored: Entry[] = [
      ...asks,
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'pay_and_call', input: { url: 'https://weather.example' } }] },
      { role: 'tool', toolCallId: 'call_1', name: 'pay_and_call', content: toolResult },
      { role: 'assistant', content: 'Sunny.' },
      { role: 'user', content: 'Thanks' },
    ];
    answers.push(json({ id: 'msg_c', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'Welcome.' }], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } }));
    await converse({ provider: providers.anthropic(), transcript: stored, tools: [payTool().tool], sampling, gate: openGate().gate });
    expect(received[0]!.body.messages).toEqual([
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'pay_and_call', input: { url: 'https://weather.example' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: toolResult }] },
      { role: 'assistant', content: 'Sunny.' },
      { role: 'user', content: 'Thanks' },
    ]);
  });

  it('lets no tool be called in the last round (tools still described, tool_choice none), so a model that keeps asking gets at most four rounds', async () => {
    const asking = (n: number) =>
      json({ id: `c${n}`, object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: `call_${n}`, type: 'function', function: { name: 'pay_and_call', arguments: '{"url":"https://weather.example"}' } }] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
    answers.push(asking(1), asking(2), asking(3), asking(4), json({ id: 'c5', object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'Enough.' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
    const { tool, inputs } = payTool();
    const outcome = await converse({ provider: providers.openai(), transcript: asks, tools: [tool], sampling, gate: openGate().gate });
    expect(received.map((r) => Boolean(r.body.tools))).toEqual([true, true, true, true, true]);
    expect(received.map((r) => r.body.tool_choice ?? null)).toEqual([null, null, null, null, 'none']);
    expect(inputs).toHaveLength(4);
    expect(outcome!.text).toBe('Enough.');
    expect(outcome!.entries).toHaveLength(4 * 2 + 1);
    expect(outcome!.usage).toEqual({ inputTokens: 5, outputTokens: 5 });
  });
});

describe.skipIf(noDatabaseTestOnPostgresPass)('the gate', () => {
  it('refusing ends the turn with null, and no request is made', async () => {
    answers.push(json({ choices: [{ index: 0, message: { role: 'assistant', content: 'never' } }] }));
    const seen: TokenAsk[] = [];
    const refuse: Gate = async (ask) => {
      seen.push(ask);
      return null;
    };
    expect(await converse({ provider: providers.openai(), transcript, tools: [], sampling, gate: refuse })).toBeNull();
    expect(seen).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(received).toHaveLength(0);
  });

  it('reserves the input as counted (with the model\'s margin) and the output cap; a smaller cap the gate grants is the one sent', async () => {
    answers.push(json({ id: 'msg', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } }));
    const asks: TokenAsk[] = [];
    const narrow: Gate = async (ask, run) => {
      asks.push(ask);
      return run(100);
    };
    const wide: Entry[] = [{ role: 'user', content: '日本語のテキスト 👋👋👋 '.repeat(50) }];
    await converse({ provider: providers.anthropic(), transcript: wide, tools: [], sampling, gate: narrow });
    expect(asks).toEqual([{ input: await estimateInputTokens(received[0]!.body, 1.3), maxOutput: 300, minOutput: MIN_OUTPUT_TOKENS }]);
    expect(received[0]!.body.max_tokens).toBe(100);
  });

  it('a budget with 500 tokens left still answers "hello": the output cap shrinks to what is left (a byte a token reserved 1,100)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'budget-'));
    try {
      const budget = new TokenBudget(dir, 10_000);
      answers.push(json({ id: 'c', object: 'chat.completion', model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'filler' } }], usage: { prompt_tokens: 4_000, completion_tokens: 5_500 } }));
      await converse({ provider: providers.openai(), transcript: [{ role: 'user', content: 'fill' }], tools: [], sampling: { maxOutputTokens: 64 }, gate: budget.gate });
      expect(budget.status().usedToday).toBe(9_500);
      answers.push(json({ id: 'c', object: 'chat.completion', model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'Hi!' } }], usage: { prompt_tokens: 8, completion_tokens: 2 } }));
      const outcome = await converse({ provider: providers.openai(), transcript: [{ role: 'user', content: 'hello' }], tools: [], sampling: { maxOutputTokens: 1024 }, gate: budget.gate });
      expect(outcome!.text).toBe('Hi!');
      const input = await estimateInputTokens(received[1]!.body, 1);
      expect(received[1]!.body.max_tokens).toBe(500 - input);
      expect(budget.status()).toMatchObject({ usedToday: 9_510, reserved: 0 });
      // Less than the least output left: refused, no call.
      const full = new TokenBudget(dir, 9_510 + input + MIN_OUTPUT_TOKENS - 1);
      expect(await converse({ provider: providers.openai(), transcript: [{ role: 'user', content: 'hello' }], tools: [], sampling: { maxOutputTokens: 1024 }, gate: full.gate })).toBeNull();
      expect(received).toHaveLength(2);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(noDatabaseTestOnPostgresPass)('models as they are today', () => {
  const openai = (model: string) => ({ ...providers.openai(), model });
  const hi = { id: 'c', object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'Hi.' } }], usage: { prompt_tokens: 5, completion_tokens: 2 } };

  it.each(['o3-mini', 'o1', 'o4-mini-2025-04-16', 'gpt-5', 'gpt-5-mini'])("OpenAI's reasoning model %s: max_completion_tokens, no temperature, the system prompt as developer", async (model) => {
    answers.push(json(hi));
    await converse({ provider: openai(model), transcript, tools: [], sampling, gate: openGate().gate });
    expect(received[0]!.body).toEqual({ model, messages: [{ role: 'developer', content: 'You are terse.' }, { role: 'user', content: 'Say hi' }], max_completion_tokens: 300 });
  });

  it('a model newer than the table that refuses max_tokens, then temperature, by name: sent again adapted, and remembered for the next call', async () => {
    const refusal = (param: string, code: string) =>
      json({ error: { message: `Unsupported ${code === 'unsupported_parameter' ? 'parameter' : 'value'}: '${param}' is not supported with this model.`, type: 'invalid_request_error', param, code } }, 400);
    answers.push(refusal('max_tokens', 'unsupported_parameter'), refusal('temperature', 'unsupported_value'), json(hi), json(hi));
    const model = 'acme-thinker-1';
    const outcome = await converse({ provider: openai(model), transcript: [{ role: 'user', content: 'Say hi' }], tools: [], sampling, gate: openGate().gate });
    expect(received.map((r) => Object.keys(r.body).filter((k) => ['max_tokens', 'max_completion_tokens', 'temperature'].includes(k)))).toEqual([
      ['max_tokens', 'temperature'],
      ['temperature', 'max_completion_tokens'],
      ['max_completion_tokens'],
    ]);
    expect(outcome!.text).toBe('Hi.');
    await converse({ provider: openai(model), transcript: [{ role: 'user', content: 'Say hi' }], tools: [], sampling, gate: openGate().gate });
    expect(Object.keys(received[3]!.body)).toEqual(['model', 'messages', 'max_completion_tokens']);
    expect(traitsOf('openai', model)).toMatchObject({ outputCap: 'max_completion_tokens', temperature: false });
  });

  it('a 400 about something else is the provider failing, sent once', async () => {
    answers.push(json({ error: { message: "Invalid value for 'messages'.", type: 'invalid_request_error', param: 'messages', code: 'invalid_value' } }, 400));
    const error = await converse({ provider: openai('gpt-4o'), transcript, tools: [], sampling, gate: openGate().gate }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(received).toHaveLength(1);
  });

  it("Anthropic: a temperature above 1 is sent as 1; Claude 3 models' output capped at their 4,096", async () => {
    answers.push(json({ id: 'm', type: 'message', role: 'assistant', model: 'claude-3-haiku-20240307', content: [{ type: 'text', text: 'Hi.' }], stop_reason: 'end_turn', usage: { input_tokens: 3, output_tokens: 2 } }));
    const { gate, estimates } = openGate();
    await converse({ provider: { ...providers.anthropic(), model: 'claude-3-haiku-20240307' }, transcript, tools: [], sampling: { maxOutputTokens: 8192, temperature: 1.5 }, gate });
    expect(received[0]!.body).toMatchObject({ max_tokens: 4096, temperature: 1 });
    expect(estimates[0]!.maxOutput).toBe(4096);
  });

  it("OpenRouter: max_tokens for every model (OpenRouter maps it), no temperature for OpenAI's reasoning models, Anthropic's capped at 1", async () => {
    answers.push(json(hi), json(hi), json(hi));
    const via = (model: string) => converse({ provider: { ...providers.openrouter(), model }, transcript, tools: [], sampling: { maxOutputTokens: 300, temperature: 1.4 }, gate: openGate().gate });
    await via('openai/o3-mini');
    await via('anthropic/claude-3.5-sonnet');
    await via('meta-llama/llama-3.3-70b-instruct');
    expect(received.map((r) => [r.body.max_tokens, r.body.temperature, r.body.messages[0].role])).toEqual([
      [300, undefined, 'system'],
      [300, 1, 'system'],
      [300, 1.4, 'system'],
    ]);
  });
});

describe.skipIf(noDatabaseTestOnPostgresPass)('failures', () => {
  async function failure(promise: Promise<unknown>): Promise<ProviderError> {
    const error = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ProviderError);
    return error as ProviderError;
  }
  const internals = /127\.0\.0\.1|ECONN|fetch failed|AbortError|TimeoutError|at \w|:\d{2,5}/;

  it("a 401 is a ProviderError with the status and the provider's own words", async () => {
    answers.push(json({ error: { message: 'Incorrect API key provided: sk-bad', type: 'invalid_request_error', code: 'invalid_api_key' } }, 401));
    const error = await failure(converse({ provider: providers.openai(), transcript, tools: [], sampling, gate: openGate().gate }));
    expect(error.status).toBe(401);
    expect(error.message).toMatch(/^the model provider answered 401: \{"error":\{"message":"Incorrect API key provided/);
  });

  it('a long error body is cut to 300 characters', async () => {
    answers.push(json({ type: 'error', error: { type: 'overloaded_error', message: 'x'.repeat(1000) } }, 529));
    const error = await failure(converse({ provider: providers.anthropic(), transcript, tools: [], sampling, gate: openGate().gate, onDelta: () => undefined }));
    expect(error.status).toBe(529);
    expect(error.message).toHaveLength('the model provider answered 529: '.length + 300);
  });

  it.each([
    ['ends cleanly', { complete: true }],
    ['breaks the connection', { complete: false }],
  ])('a stream that %s before its final event is a ProviderError', async (_, how) => {
    const frames = openAiChunks([chunk({ delta: { role: 'assistant', content: 'Hal' } }), chunk({ delta: { content: 'f an answer' } })]);
    answers.push(stream(frames.slice(0, frames.indexOf('data: [DONE]')), how));
    const deltas: string[] = [];
    const error = await failure(converse({ provider: providers.openai(), transcript, tools: [], sampling, gate: openGate().gate, onDelta: (text) => deltas.push(text) }));
    expect(deltas).toEqual(['Hal', 'f an answer']);
    expect(error.message).toBe("the model provider's answer broke off before its end");
    expect(error.message).not.toMatch(internals);
  });

  it('an Anthropic stream without message_stop is a ProviderError', async () => {
    answers.push(
      stream(
        anthropicEvents([
          ['message_start', { message: { id: 'msg', model: 'm', usage: { input_tokens: 1, output_tokens: 1 } } }],
          ['content_block_start', { index: 0, content_block: { type: 'text', text: '' } }],
          ['content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hi' } }],
          ['content_block_stop', { index: 0 }],
          ['message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }],
        ]),
      ),
    );
    const error = await failure(converse({ provider: providers.anthropic(), transcript, tools: [], sampling, gate: openGate().gate, onDelta: () => undefined }));
    expect(error.message).toBe("the model provider's answer broke off before its end");
  });

  it("an Anthropic error event mid-stream is a ProviderError in the provider's words", async () => {
    answers.push(
      stream(
        anthropicEvents([
          ['message_start', { message: { id: 'msg', model: 'm', usage: { input_tokens: 1, output_tokens: 1 } } }],
          ['error', { error: { type: 'overloaded_error', message: 'Overloaded' } }],
        ]),
      ),
    );
    const error = await failure(converse({ provider: providers.anthropic(), transcript, tools: [], sampling, gate: openGate().gate, onDelta: () => undefined }));
    expect(error.message).toBe('the model provider answered with an error: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}');
  });

  it('an answer that is not JSON is a ProviderError', async () => {
    answers.push((response) => void response.writeHead(200, { 'content-type': 'text/html' }).end('<html>gateway</html>'));
    const error = await failure(converse({ provider: providers.openai(), transcript, tools: [], sampling, gate: openGate().gate }));
    expect(error).toMatchObject({ message: 'the model provider answered with something that is not JSON', status: 200 });
  });

  it('the turn signal aborts a call the provider is slow to answer: no internal details', async () => {
    answers.push(() => undefined); // never answers
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const error = await failure(converse({ provider: providers.openai(), transcript, tools: [], sampling, gate: openGate().gate, signal: controller.signal }));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error).toMatchObject({ message: 'the model provider did not answer in time', status: null });
    expect(error.message).not.toMatch(internals);
  });

  it('the turn signal aborts a stream mid-way', async () => {
    answers.push(async (response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(`data: ${JSON.stringify(chunk({ delta: { role: 'assistant', content: 'Thinking' } }))}\n\n`);
    });
    const controller = new AbortController();
    const deltas: string[] = [];
    const error = await failure(
      converse({
        provider: providers.openai(),
        transcript,
        tools: [],
        sampling,
        gate: openGate().gate,
        signal: controller.signal,
        onDelta: (text) => {
          deltas.push(text);
          controller.abort();
        },
      }),
    );
    expect(deltas).toEqual(['Thinking']);
    expect(error).toMatchObject({ message: 'the model provider did not answer in time', status: null });
  });

  it('a provider that cannot be reached is a ProviderError without our network details', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await failure(converse({ provider: { ...providers.openai(), baseUrl: `http://127.0.0.1:${port}/v1` }, transcript, tools: [], sampling, gate: openGate().gate }));
    expect(error).toMatchObject({ message: 'the model provider did not answer', status: null });
    expect(error.message).not.toMatch(internals);
  });
});
