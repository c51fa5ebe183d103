import { Writable } from 'node:stream';
import { createPublicClient, http } from 'viem';
import { describe, expect, it } from 'vitest';
import { errorText, redactText, redactValue } from './log-redaction.js';
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

  it('drops a key in the path alone and a key in the query alone, keeping scheme, host and port', () => {
    const text = 'URL: https://base-mainnet.g.alchemy.com/v2/PATHKEY123\nURL: https://rpc.ankr.com?apikey=QUERYKEY456&x=1\nwss://eth.example:8546/ws/WSKEY789';
    const redacted = redactText(text);
    expect(redacted).toBe('URL: https://base-mainnet.g.alchemy.com/[redacted]\nURL: https://rpc.ankr.com/[redacted]\nwss://eth.example:8546/[redacted]');
    expect(redactText(redacted)).toBe(redacted); // redacting twice changes nothing (readiness reasons may be)
  });

  it('drops user info (a password may hold an @) and keeps the host', () => {
    const redacted = redactText('failed: https://:PROJECTSECRET@mainnet.infura.io/v3/ID and "http://user:p@ss@10.0.0.5:8545"');
    expect(redacted).toBe('failed: https://[redacted]@mainnet.infura.io/[redacted] and "http://[redacted]@10.0.0.5:8545/[redacted]"');
  });

  it('errorText and redactValue: an error message and every string of a plain value, redacted', () => {
    expect(errorText(new Error('HTTP request failed.\nURL: http://127.0.0.1:1/v2/KEYPATH?apikey=KEYQUERY'))).toBe('HTTP request failed.\nURL: http://127.0.0.1:1/[redacted]');
    expect(errorText('down: https://rpc.example/v2/KEYPATH')).toBe('down: https://rpc.example/[redacted]');
    expect(redactValue({ block: 7, loops: { last: ['https://rpc.example/?apikey=KEYQUERY'] }, ok: true })).toEqual({ block: 7, loops: { last: ['https://rpc.example/[redacted]'] }, ok: true });
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
