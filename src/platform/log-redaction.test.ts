import { Writable } from 'node:stream';
import { createPublicClient, http } from 'viem';
import { describe, expect, it } from 'vitest';
import { redactText } from './log-redaction.js';
import { createLogger } from './request-context.js';

const SIGNATURE = `0x${'ab'.repeat(65)}`;

/** The root logger writing into memory. */
function memoryLogger() {
  const lines: string[] = [];
  const stream = new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) });
  return { log: createLogger('info', stream), text: () => lines.join('') };
}

describe('log redaction', () => {
  it("drops an RPC URL's path and query, a request body and a signature from text, keeping the host", () => {
    const text = `HTTP request failed.\nURL: https://rpc.example.com/v2/SECRETKEY?token=abc\nRequest body: {"method":"eth_sendRawTransaction","params":["${SIGNATURE}"]}\nsig ${SIGNATURE}`;
    const redacted = redactText(text);
    expect(redacted).toContain('https://rpc.example.com/[redacted]');
    expect(redacted).toContain('Request body: [redacted]');
    expect(redacted).not.toMatch(/SECRETKEY|token=abc|eth_sendRawTransaction|abababab/);
  });

  it("a real viem transport error logged as err carries neither the RPC key nor the request's signature", async () => {
    const client = createPublicClient({ transport: http('http://127.0.0.1:1/v3/SECRETKEY?apikey=xyz', { retryCount: 0 }) });
    const error = await client.request({ method: 'eth_sendRawTransaction' as never, params: [SIGNATURE] as never }).catch((e: unknown) => e);
    expect(String((error as Error).message)).toContain('SECRETKEY');
    const { log, text } = memoryLogger();

    log.warn({ err: error }, 'send failed');

    expect(text()).toContain('send failed');
    expect(text()).toContain('127.0.0.1:1/[redacted]');
    expect(text()).not.toMatch(/SECRETKEY|apikey=xyz|abababab/);
  });
});
