// A paid chat turn (issue 47) through a crash: `tollgate serve` as a real process (test/crash/harness.ts), SIGKILLed
// after the permit's turn was recorded but before it began, and after the turn completed but before its settle. Then
// restarted on the same data, the buyer sends the same permit again: a turn that never ran is failed and charged
// nothing; a turn that ran is settled for exactly its tokens × price and answered as it was, with no second turn.
// What moved is read from the chain's Transfer logs.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { UptoEvmScheme } from '@x402/evm/upto/client';
import { createPublicClient, createWalletClient, http as viemHttp, maxUint256, parseAbi, parseAbiItem, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, describe, expect, it } from 'vitest';
import { PERMIT2_ADDRESS } from '../../src/chain/x402-contracts.js';
import type { CrashPoint } from '../../src/platform/crash-points.js';
import { admin, crashHarness, eventually, freshData, serve, stop, USDG, type Instance } from '../crash/harness.js';

const { pointDone } = crashHarness('agents paid chat crash');
const NETWORK = 'eip155:4663';
const PRICE = 1000n;

let modelCalls = 0;
const model = http.createServer(async (request, response) => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString());
  modelCalls += 1;
  const usage = { prompt_tokens: 1500, completion_tokens: 7, total_tokens: 1507 };
  response.writeHead(200, { 'content-type': 'application/json' }).end(
    JSON.stringify({ id: 'c', object: 'chat.completion', model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: `ok: ${body.messages.at(-1).content}` }, finish_reason: 'stop' }], usage }),
  );
});
await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
const modelEnv = { AGENT_OPENAI_BASE_URL: `http://127.0.0.1:${(model.address() as AddressInfo).port}/openai/v1`, LOG_LEVEL: 'fatal', AGENT_TURN_STALE_SECONDS: '4' };
afterAll(() => {
  model.closeAllConnections();
  model.close();
});

const transfer = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
async function moved(rpc: string, from: Address, to: Address): Promise<bigint[]> {
  const client = createPublicClient({ transport: viemHttp(rpc) });
  return (await client.getLogs({ address: USDG, event: transfer, args: { from, to }, fromBlock: 0n })).map((log) => log.args.value!);
}

describe('kill -9 under a paid chat turn', () => {
  it.each([
    ['agents.paid-turn.after-open', false],
    ['agents.paid-turn.after-turn', true],
  ] as Array<[CrashPoint, boolean]>)('killed at %s: the same permit after the restart is answered once, charged for what ran', async (point, ran) => {
    const data = await freshData();
    let current: Instance = await serve(data, point, modelEnv);
    await admin(data.dataDir, 'credits.grant', { sub: 'crash-seller', cents: 1000 });
    const { token } = await admin(data.dataDir, 'dev.token', { sub: 'crash-seller' });
    const owner = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${current.api}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(15_000) });
      return { status: response.status, body: (await response.json().catch(() => null)) as any };
    };
    const agentId = (await owner('POST', '/agents', { name: 'crash-oracle', type: 'runtime_a' })).body.data.agent.id as string;
    expect(await eventually(async () => (await owner('GET', `/agents/${agentId}`)).body?.data?.status === 'running', 45_000), 'the agent was not deployed').toBe(true);
    expect((await owner('PUT', `/agents/${agentId}/providers`, { provider: 'openai', apiKey: 'sk-openai-crash-0000' })).status).toBe(200);
    const payTo = privateKeyToAccount(generatePrivateKey()).address;
    expect((await owner('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: PRICE.toString(), maxTokensPerTurn: 4000, payTo })).status).toBe(200);

    // The buyer: its own key, funded, Permit2 approved; one permit signed with the official upto client.
    const payer = privateKeyToAccount(generatePrivateKey());
    await admin(data.dataDir, 'dev.fund', { address: payer.address, amount: '1' });
    const wallet = createWalletClient({ account: payer, transport: viemHttp(current.rpc) });
    const approval = await wallet.writeContract({ chain: null, address: USDG, abi: parseAbi(['function approve(address, uint256) returns (bool)']), functionName: 'approve', args: [PERMIT2_ADDRESS, maxUint256] });
    await createPublicClient({ transport: viemHttp(current.rpc) }).waitForTransactionReceipt({ hash: approval });
    const url = `${current.api}/agents/${agentId}/paid-chat`;
    const body = JSON.stringify({ messages: [{ role: 'user', content: 'survive' }] });
    const challenge = decodePaymentRequiredHeader((await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).headers.get('payment-required')!) as PaymentRequired;
    const client = x402Client.fromConfig({ schemes: [{ network: NETWORK, client: new UptoEvmScheme(payer) }], spendControls: { allowedAssets: [{ network: NETWORK, asset: USDG, maxAmountPerPayment: '4000' }] } });
    const header = encodePaymentSignatureHeader(await client.createPaymentPayload(challenge));
    const send = () => fetch(url.replace(/^http:\/\/[^/]+/, current.api), { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': header }, body });

    const before = modelCalls;
    expect(await send().then(() => 'answered', () => 'connection lost')).toBe('connection lost');
    expect(await current.exited).toBe(137);
    expect(modelCalls - before).toBe(ran ? 1 : 0);
    expect(await moved(current.rpc, payer.address, payTo)).toEqual([]);

    current = await serve(data, undefined, modelEnv);
    try {
      // A turn that never began is failed once it is stale (until then the permit's copy is told to wait).
      const answer = await eventually(async () => {
        const res = await send();
        return res.status === 409 ? null : { status: res.status, body: (await res.json()) as any, receipt: res.headers.get('payment-response') };
      }, 45_000);
      expect(answer).not.toBeNull();
      if (ran) {
        const cost = (1507n * PRICE + 999n) / 1000n;
        expect(answer!.status).toBe(200);
        expect(answer!.body.data).toMatchObject({ text: 'ok: survive', usage: { tokens: 1507, amount: cost.toString() } });
        expect(await moved(current.rpc, payer.address, payTo)).toEqual([cost]);
      } else {
        expect(answer!.status).toBe(503);
        expect(answer!.body).toMatchObject({ data: { reason: 'runtime_unavailable' } });
        expect(JSON.parse(Buffer.from(answer!.receipt!, 'base64').toString())).toMatchObject({ success: true, amount: '0' });
        expect(await moved(current.rpc, payer.address, payTo)).toEqual([]);
      }
      // No second turn, and the same permit answers the same again.
      expect(modelCalls - before).toBe(ran ? 1 : 0);
      const again = await send();
      expect(again.status).toBe(answer!.status);
      expect(await again.json()).toEqual(answer!.body);
      expect((await moved(current.rpc, payer.address, payTo)).length).toBe(ran ? 1 : 0);
    } finally {
      await stop(current);
    }
    pointDone();
  }, 240_000);
});
