// Server-Sent Events, as the WHATWG spec reads them (https://html.spec.whatwg.org/multipage/server-sent-events.html):
// lines end in \r\n, \n or \r; an empty line dispatches the event; `:` starts a comment; `data` lines join
// with \n. Bytes arrive in arbitrary pieces, so a line (even a UTF-8 character, or a \r\n pair) may be split
// between two reads: only whole lines are read, and the rest waits for the next piece.

export interface ServerSentEvent {
  /** The `event` field, 'message' when the event names none. */
  event: string;
  data: string;
}

export async function* serverSentEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let pending = '';
  let event = '';
  let data: string[] = [];

  function* lines(done: boolean): Generator<string> {
    for (;;) {
      const end = pending.search(/[\r\n]/);
      if (end === -1) break;
      // A \r at the end of what arrived may be the first half of \r\n: wait for the next piece.
      if (pending[end] === '\r' && end === pending.length - 1 && !done) break;
      const line = pending.slice(0, end);
      pending = pending.slice(end + (pending.startsWith('\r\n', end) ? 2 : 1));
      yield line;
    }
  }

  function* read(line: string): Generator<ServerSentEvent> {
    if (line === '') {
      // The spec dispatches nothing for an event without data, and the name applies to this event only.
      if (data.length) yield { event: event || 'message', data: data.join('\n') };
      event = '';
      data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + (line[colon + 1] === ' ' ? 2 : 1));
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    // `id` and `retry` only matter to a client that reconnects, which a model call never does.
  }

  for await (const piece of body) {
    pending += decoder.decode(piece, { stream: true });
    for (const line of lines(false)) yield* read(line);
  }
  pending += decoder.decode();
  for (const line of lines(true)) yield* read(line);
  // What is left is an event the stream never finished: the spec discards it.
}
