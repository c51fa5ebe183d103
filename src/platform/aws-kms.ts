import {
  getAddress,
  hashMessage,
  hashTypedData,
  keccak256,
  recoverAddress,
  serializeSignature,
  serializeTransaction,
  type Address,
  type Hex,
  type LocalAccount,
} from 'viem';
import { publicKeyToAddress, toAccount } from 'viem/accounts';
import { signedJsonPost, type AwsCredentials } from './aws-sigv4.js';

export interface AwsKmsOptions {
  region: string;
  /** https://kms.<region>.amazonaws.com unless given (a VPC endpoint, or a compatible service). */
  endpoint: string;
  credentials: AwsCredentials;
}

/** secp256k1's group order: KMS may answer a high s, which Ethereum refuses (EIP-2). */
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

export class KmsError extends Error {}

/**
 * secp256k1 keys held in AWS KMS (ECC_SECG_P256K1, SIGN_VERIFY): the private key never leaves KMS. An
 * account() hashes here (EIP-191, EIP-712, transactions) and has KMS sign the digest, then makes the
 * signature Ethereum's (low s, recovery id found by recovering the address). Wallet keys (the wallets
 * module's provider) and relayer keys (FACILITATOR_KMS_KEY_IDS) both live here.
 */
export class AwsKms {
  readonly #addresses = new Map<string, Address>();

  constructor(private readonly options: AwsKmsOptions) {}

  /** A new key; its id. */
  async createKey(description: string, tags: { TagKey: string; TagValue: string }[]): Promise<string> {
    const created = (await this.#call('CreateKey', { KeySpec: 'ECC_SECG_P256K1', KeyUsage: 'SIGN_VERIFY', Description: description, Tags: tags })) as {
      KeyMetadata: { KeyId: string };
    };
    return created.KeyMetadata.KeyId;
  }

  /** The Ethereum address of a key (its public key read once). */
  address(keyId: string): Promise<Address> {
    return this.#address(keyId);
  }

  /** A viem account that signs with the key. */
  async account(keyId: string): Promise<LocalAccount> {
    const address = await this.#address(keyId);
    const sign = (hash: Hex) => this.#signDigest(keyId, address, hash);
    return toAccount({
      address,
      signMessage: async ({ message }) => serializeSignature(await sign(hashMessage(message))),
      signTypedData: async (typedData) => serializeSignature(await sign(hashTypedData(typedData))),
      signTransaction: async (transaction, options) => {
        const serializer = options?.serializer ?? serializeTransaction;
        return serializer(transaction, await sign(keccak256(await serializer(transaction))));
      },
    });
  }

  async #address(keyId: string): Promise<Address> {
    const cached = this.#addresses.get(keyId);
    if (cached) return cached;
    const { PublicKey } = (await this.#call('GetPublicKey', { KeyId: keyId })) as { PublicKey: string };
    // SubjectPublicKeyInfo (DER): the uncompressed point 0x04‖X‖Y is its last 65 bytes.
    const point = Buffer.from(PublicKey, 'base64').subarray(-65);
    if (point[0] !== 0x04) throw new KmsError(`KMS key ${keyId} is not an uncompressed secp256k1 key`);
    const address = getAddress(publicKeyToAddress(`0x${point.toString('hex')}`));
    this.#addresses.set(keyId, address);
    return address;
  }

  async #signDigest(keyId: string, address: Address, hash: Hex) {
    const { Signature } = (await this.#call('Sign', {
      KeyId: keyId,
      Message: Buffer.from(hash.slice(2), 'hex').toString('base64'),
      MessageType: 'DIGEST',
      SigningAlgorithm: 'ECDSA_SHA_256',
    })) as { Signature: string };
    const { r, s: rawS } = parseDerSignature(Buffer.from(Signature, 'base64'));
    const s = rawS > N / 2n ? N - rawS : rawS;
    const hex = (value: bigint) => `0x${value.toString(16).padStart(64, '0')}` as Hex;
    for (const yParity of [0, 1]) {
      const signature = { r: hex(r), s: hex(s), yParity };
      if ((await recoverAddress({ hash, signature: serializeSignature(signature) })) === address) return signature;
    }
    throw new KmsError(`KMS signature of key ${keyId} does not recover its address`);
  }

  async #call(operation: string, payload: unknown): Promise<unknown> {
    const url = new URL(this.options.endpoint);
    const body = JSON.stringify(payload);
    const send = () => {
      // Signed per attempt: the signature covers the request time.
      const headers = signedJsonPost(url, 'kms', this.options.region, `TrentService.${operation}`, body, this.options.credentials);
      return fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(15_000) });
    };
    let response: Response;
    try {
      response = await send();
    } catch (error) {
      // A pooled connection the endpoint closed while idle resets on reuse; reading a key and signing a
      // digest change nothing, so they are sent once more (CreateKey is not: it could make two keys).
      if (operation === 'CreateKey' || !isConnectionReset(error)) throw error;
      response = await send();
    }
    const text = await response.text();
    if (!response.ok) {
      const error = safeJson(text) as { __type?: string; message?: string; Message?: string };
      throw new KmsError(`KMS ${operation} answered ${response.status}: ${error.__type ?? ''} ${error.message ?? error.Message ?? text.slice(0, 200)}`.trim());
    }
    return safeJson(text);
  }
}

/** ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER } (DER). */
export function parseDerSignature(der: Buffer): { r: bigint; s: bigint } {
  let offset = 0;
  const expect = (tag: number) => {
    if (der[offset] !== tag) throw new KmsError('KMS returned a malformed signature');
    offset += 1;
    let length = der[offset++]!;
    if (length & 0x80) {
      const bytes = length & 0x7f;
      length = 0;
      for (let i = 0; i < bytes; i += 1) length = (length << 8) | der[offset++]!;
    }
    return length;
  };
  expect(0x30);
  const integer = () => {
    const length = expect(0x02);
    const value = BigInt(`0x${der.subarray(offset, offset + length).toString('hex') || '0'}`);
    offset += length;
    return value;
  };
  return { r: integer(), s: integer() };
}

function isConnectionReset(error: unknown): boolean {
  const code = (error as { cause?: { code?: string } })?.cause?.code;
  return code === 'ECONNRESET' || code === 'UND_ERR_SOCKET';
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}
