// Calls made in the same turn of the event loop, served by one run: the settles of a mined batch resume
// together, and one statement for all of them costs about what one statement for each of them costs once.

/**
 * Wraps `run` so that every call made before the next setImmediate joins one run of it. `run` gets the
 * inputs in call order and answers one output per input, in the same order; if it throws, every call of
 * that run rejects with the error.
 */
export function perTurn<In, Out>(run: (inputs: In[]) => Promise<Out[]>): (input: In) => Promise<Out> {
  let waiting: Array<{ input: In; resolve(out: Out): void; reject(error: unknown): void }> = [];
  const flush = async () => {
    const calls = waiting;
    waiting = [];
    try {
      const outs = await run(calls.map((c) => c.input));
      calls.forEach((c, i) => c.resolve(outs[i]!));
    } catch (error) {
      for (const c of calls) c.reject(error);
    }
  };
  return (input) =>
    new Promise<Out>((resolve, reject) => {
      waiting.push({ input, resolve, reject });
      if (waiting.length === 1) setImmediate(() => void flush());
    });
}
