// A stand-in of AWS KMS's JSON API (CreateKey, GetPublicKey, Sign) for tests: it checks each request's
// Signature Version 4 against the one secret it knows, keeps secp256k1 keys in memory, answers public keys as
// DER SubjectPublicKeyInfo and signatures as DER ECDSA-Sig-Value over the given digest, like KMS.
import { createHash, createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, sign } from 'viem/accounts';

const SPKI_SECP256K1_PREFIX = '3056301006072a8648ce3d020106052b8104000a034200';

function derInteger(hex: string): Buffer {
  let bytes = Buffer.from(hex.replace(/^0x/, '').padStart(64, '0'), 'hex');
  while (bytes.length > 1 && bytes[0] === 0 && !(bytes[1]! & 0x80)) bytes = bytes.subarray(1);
  if (bytes[0]! & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return Buffer.concat([Buffer.from([0x02, bytes.length]), bytes]);
}

export async function startKmsStandIn(accessKeyId: string, secretAccessKey: string, region: string) {
  const keys = new Map<string, Hex>();
  const calls: Array<{ target: string; body: any }> = [];
  const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();

  /** Recomputes the request's SigV4 signature from what arrived; true when it matches. */
  function verify(request: http.IncomingMessage, body: string): boolean {
    const match = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/kms\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(request.headers.authorization ?? '');
    if (!match || match[1] !== accessKeyId || match[3] !== region) return false;
    const names = match[4]!.split(';');
    const canonical = ['POST', '/', '', ...names.map((n) => `${n}:${request.headers[n]}`), '', names.join(';'), createHash('sha256').update(body).digest('hex')].join('\n');
    const amzDate = String(request.headers['x-amz-date']);
    const scope = `${match[2]}/${region}/kms/aws4_request`;
    const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
    const key = hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, match[2]!), region), 'kms'), 'aws4_request');
    return createHmac('sha256', key).update(toSign).digest('hex') === match[5];
  }

  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString();
    const send = (status: number, payload: unknown) => response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(payload));
    if (!verify(request, raw)) return send(400, { __type: 'InvalidSignatureException', message: 'The request signature we calculated does not match the signature you provided.' });
    const target = String(request.headers['x-amz-target']);
    const body = JSON.parse(raw);
    calls.push({ target, body });
    if (target === 'TrentService.CreateKey') {
      if (body.KeySpec !== 'ECC_SECG_P256K1' || body.KeyUsage !== 'SIGN_VERIFY') return send(400, { __type: 'ValidationException', message: 'unsupported key' });
      const keyId = randomUUID();
      keys.set(keyId, generatePrivateKey());
      return send(200, { KeyMetadata: { KeyId: keyId, Arn: `arn:aws:kms:${region}:000000000000:key/${keyId}`, KeySpec: body.KeySpec, KeyUsage: body.KeyUsage, Enabled: true } });
    }
    const key = keys.get(body.KeyId);
    if (!key) return send(400, { __type: 'NotFoundException', message: `Key '${body.KeyId}' does not exist` });
    if (target === 'TrentService.GetPublicKey') {
      const point = privateKeyToAccount(key).publicKey.slice(2);
      return send(200, { KeyId: body.KeyId, KeySpec: 'ECC_SECG_P256K1', PublicKey: Buffer.from(SPKI_SECP256K1_PREFIX + point, 'hex').toString('base64') });
    }
    if (target === 'TrentService.Sign') {
      if (body.MessageType !== 'DIGEST' || body.SigningAlgorithm !== 'ECDSA_SHA_256') return send(400, { __type: 'ValidationException', message: 'unsupported signing request' });
      const digest = `0x${Buffer.from(body.Message, 'base64').toString('hex')}` as Hex;
      const signature = await sign({ hash: digest, privateKey: key });
      // KMS does not promise a low s (Ethereum requires one): answer the high twin, which the adapter must fix.
      const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
      const s = n - BigInt(signature.s);
      const sequence = Buffer.concat([derInteger(signature.r), derInteger(s.toString(16))]);
      return send(200, { KeyId: body.KeyId, SigningAlgorithm: 'ECDSA_SHA_256', Signature: Buffer.concat([Buffer.from([0x30, sequence.length]), sequence]).toString('base64') });
    }
    return send(400, { __type: 'UnknownOperationException', message: target });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, keys, calls, close: () => new Promise((resolve) => server.close(resolve)) };
}
