/** A raw JSON-RPC call, for node-specific methods viem's typed clients do not describe (anvil_*, evm_*). */
export async function rpcCall<T = unknown>(url: string, method: string, params: unknown[] = [], timeoutMs = 10_000): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}
