import type { ToolCall } from './model-types.js';
import { brokenOff, objectOf, parseJson, temperatureOf, unusable, type Wire } from './wire.js';

// OpenAI's chat completions protocol, which OpenRouter speaks too (at its own base URL, with a title header):
// the transcript as messages, tool calls as functions, and the stream's chunks put back together into the
// non-streaming answer.

export const openAiWire: Wire = {
  url: (provider) => `${provider.baseUrl}/chat/completions`,
  headers: (provider) => ({ authorization: `Bearer ${provider.apiKey}`, ...(provider.name === 'openrouter' ? { 'x-title': 'Tollgate agent' } : {}) }),
  body: (provider, traits, transcript, tools, sampling, stream, lastRound) => ({
    model: provider.model,
    messages: transcript.map((entry) => {
      if (entry.role === 'tool') return { role: 'tool', tool_call_id: entry.toolCallId, content: entry.content };
      if (entry.role === 'assistant' && entry.toolCalls?.length) {
        const toolCalls = entry.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.input) } }));
        return { role: 'assistant', content: entry.content, tool_calls: toolCalls };
      }
      return { role: entry.role === 'system' ? traits.systemRole : entry.role, content: entry.content };
    }),
    [traits.outputCap]: sampling.maxOutputTokens,
    ...temperatureOf(sampling, traits),
    ...(tools.length ? { tools: tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })), ...(lastRound ? { tool_choice: 'none' } : {}) } : {}),
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  }),
  async collect(events, onDelta) {
    let id = '';
    let model = '';
    let content = '';
    let finishReason: string | null = null;
    let usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    // Tool calls come in fragments by index: the first names the call, the rest add to its arguments.
    const toolCalls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> = [];
    for await (const { data } of events) {
      if (data === '[DONE]') {
        const message = { role: 'assistant', content: toolCalls.length && !content ? null : content, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) };
        return { id, object: 'chat.completion', model, choices: [{ index: 0, message, finish_reason: finishReason }], usage };
      }
      const chunk = parseJson(data);
      if (chunk.error) throw unusable(`the model provider answered with an error: ${data.slice(0, 300)}`);
      id ||= chunk.id ?? '';
      model ||= chunk.model ?? '';
      if (chunk.usage) usage = { prompt_tokens: chunk.usage.prompt_tokens ?? 0, completion_tokens: chunk.usage.completion_tokens ?? 0, total_tokens: chunk.usage.total_tokens ?? 0 };
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      finishReason = choice.finish_reason ?? finishReason;
      if (typeof choice.delta?.content === 'string' && choice.delta.content) {
        content += choice.delta.content;
        onDelta(choice.delta.content);
      }
      for (const fragment of choice.delta?.tool_calls ?? []) {
        const call = (toolCalls[fragment.index ?? 0] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
        call.id ||= fragment.id ?? '';
        call.function.name ||= fragment.function?.name ?? '';
        call.function.arguments += fragment.function?.arguments ?? '';
      }
    }
    throw brokenOff();
  },
  parse(raw) {
    const message = raw?.choices?.[0]?.message;
    if (!message) throw unusable('the model provider answered without a message');
    const calls: ToolCall[] = (message.tool_calls ?? []).map((call: { id: string; function: { name: string; arguments: string } }) => ({
      id: call.id,
      name: call.function.name,
      input: objectOf(call.function.arguments),
    }));
    if (calls.length === 0 && typeof message.content !== 'string') throw unusable('the model provider answered without text');
    return { text: message.content ?? '', calls, raw, usage: { inputTokens: raw.usage?.prompt_tokens ?? 0, outputTokens: raw.usage?.completion_tokens ?? 0 } };
  },
};
