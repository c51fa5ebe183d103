// The queue benches' HTTP client of the Tollgate server (run.ts, cpu.ts).
import http from 'node:http';

/** A keep-alive JSON client of the Tollgate server (node:http: lighter than fetch); resolves with `data`. */
export function client(ready: { api: string; apiKey: string }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const base = new URL(ready.api);
  return (url: string, body: unknown) =>
    new Promise<any>((resolve, reject) => {
      const payload = JSON.stringify(body);
      const request = http.request(
        {
          agent,
          host: base.hostname,
          port: base.port,
          path: url,
          method: 'POST',
          headers: { authorization: `Bearer ${ready.apiKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const json = JSON.parse(Buffer.concat(chunks).toString()) as { code: number; data: any };
            if ((response.statusCode ?? 500) >= 300 || json.code !== 0) reject(new Error(`${url}: ${response.statusCode} ${JSON.stringify(json)}`));
            else resolve(json.data);
          });
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end(payload);
    });
}
