import { brokenOff, objectOf, parseJson, temperatureOf, unusable, type Wire } from './wire.js';

// Anthropic's messages protocol: the transcript as messages and content blocks, and the stream's events
// put back together into the non-streaming answer.

/** Anthropic takes the system prompt apart, tool calls and results as content blocks, and its API version header. */
export const anthropicWire: Wire = {
  url: (provider) => `${provider.baseUrl}/messages`,
  headers: (provider) => ({ 'x-api-key': provider.apiKey, 'anthropic-version': '2023-06-01' }),
  body(provider, traits, transcript, tools, sampling, stream, lastRound) {
    const system = transcript.flatMap((entry) => (entry.role === 'system' ? [entry.content] : [])).join('\n\n');
    const messages: Array<{ role: 'user' | 'assistant'; content: unknown }> = [];
    // Tool results answer the assistant message before them, all in one user message.
    let results: unknown[] | null = null;
    for (const entry of transcript) {
      if (entry.role === 'tool') {
        if (!results) messages.push({ role: 'user', content: (results = []) });
        results.push({ type: 'tool_result', tool_use_id: entry.toolCallId, content: entry.content });
        continue;
      }
      results = null;
      if (entry.role === 'system') continue;
      if (entry.role === 'assistant' && entry.toolCalls?.length) {
        const uses = entry.toolCalls.map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: call.input }));
        messages.push({ role: 'assistant', content: [...(entry.content ? [{ type: 'text', text: entry.content }] : []), ...uses] });
      } else messages.push({ role: entry.role, content: entry.content });
    }
    return {
      model: provider.model,
      max_tokens: sampling.maxOutputTokens,
      ...temperatureOf(sampling, traits),
      ...(system ? { system } : {}),
      messages,
      ...(tools.length ? { tools: tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })), ...(lastRound ? { tool_choice: { type: 'none' } } : {}) } : {}),
      ...(stream ? { stream: true } : {}),
    };
  },
  async collect(events, onDelta) {
    let message: { id: string; model: string; stop_reason: string | null; usage: { input_tokens: number; output_tokens: number } } | null = null;
    const blocks: Array<Record<string, any>> = []; // eslint-disable-line @typescript-eslint/no-explicit-any
    const inputJson: string[] = [];
    for await (const { event, data } of events) {
      if (event === 'ping') continue;
      if (event === 'error') throw unusable(`the model provider answered with an error: ${data.slice(0, 300)}`);
      const payload = parseJson(data);
      if (event === 'message_start') {
        const start = payload.message ?? {};
        message = { id: start.id ?? '', model: start.model ?? '', stop_reason: null, usage: { input_tokens: start.usage?.input_tokens ?? 0, output_tokens: start.usage?.output_tokens ?? 0 } };
      } else if (event === 'content_block_start') {
        blocks[payload.index] = { ...payload.content_block };
        inputJson[payload.index] = '';
      } else if (event === 'content_block_delta') {
        const block = blocks[payload.index];
        if (!block) throw unusable('the model provider streamed a delta of a block it never started');
        if (payload.delta?.type === 'text_delta') {
          block.text = (block.text ?? '') + payload.delta.text;
          onDelta(payload.delta.text);
        } else if (payload.delta?.type === 'input_json_delta') inputJson[payload.index] += payload.delta.partial_json;
      } else if (event === 'content_block_stop') {
        const block = blocks[payload.index];
        if (block?.type === 'tool_use' && inputJson[payload.index]) block.input = objectOf(inputJson[payload.index]!);
      } else if (event === 'message_delta') {
        if (!message) throw brokenOff();
        message.stop_reason = payload.delta?.stop_reason ?? message.stop_reason;
        // output_tokens in message_delta is the running total, not an increment.
        message.usage.output_tokens = payload.usage?.output_tokens ?? message.usage.output_tokens;
      } else if (event === 'message_stop') {
        if (!message) throw brokenOff();
        return { id: message.id, type: 'message', role: 'assistant', model: message.model, content: blocks.filter(Boolean), stop_reason: message.stop_reason, usage: message.usage };
      }
    }
    throw brokenOff();
  },
  parse(raw) {
    const content: Array<{ type: string; text?: string; id?: string; name?: string; input?: Record<string, unknown> }> = raw?.content ?? [];
    const text = content.filter((part) => part.type === 'text').map((part) => part.text ?? '').join('');
    const calls = content.filter((part) => part.type === 'tool_use').map((part) => ({ id: part.id!, name: part.name!, input: part.input ?? {} }));
    if (!text && calls.length === 0) throw unusable('the model provider answered without text');
    return { text, calls, raw, usage: { inputTokens: raw.usage?.input_tokens ?? 0, outputTokens: raw.usage?.output_tokens ?? 0 } };
  },
};
