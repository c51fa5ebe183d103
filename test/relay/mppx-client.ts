import { Challenge, Credential } from 'mppx';
import { Mppx as ClientMppx, evm as evmClient } from 'mppx/client';
import { Mppx as ServerMppx, evm as evmServer } from 'mppx/server';
import { formatUnits, type LocalAccount } from 'viem';
import type { RelayAsset } from '../../src/modules/relay/credential.js';

/** The relay's production asset: USDG on Robinhood Chain (eip155:4663). */
export const USDG_4663: RelayAsset = {
  chainId: 4663,
  network: 'eip155:4663',
  address: '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168',
  symbol: 'USDG',
  decimals: 6,
  name: 'Global Dollar',
  version: '1',
};

export interface MppxCredentialOptions {
  /** The payer: a viem local account (e.g. privateKeyToAccount). */
  account: LocalAccount;
  /** Atomic units, e.g. '10000' = 0.01 USDG. */
  amount: string;
  recipient: `0x${string}`;
  asset?: RelayAsset;
  /** The merchant's realm and HMAC secret (the relay never sees the secret). */
  realm?: string;
  secretKey?: string;
  /** Challenge expiry; mppx's default is 5 minutes (the client signs validBefore = expires). */
  expires?: Date;
  description?: string;
  externalId?: string;
}

export interface MppxCredentialResult {
  /** mppx's parsed credential object ({ challenge, payload, source }), as Credential.deserialize returns it. */
  credential: Credential.Credential;
  /** The same credential as the Authorization header value: `Payment <base64url JSON>`. */
  serialized: string;
  /** The charge request embedded in the challenge (what the merchant sends the relay as `request`). */
  request: Record<string, unknown>;
  /** The challenge as the merchant's server issued it. */
  challenge: Challenge.Challenge;
  /** The 402 answer's WWW-Authenticate header value. */
  wwwAuthenticate: string;
}

/**
 * A credential exactly as a real MPP exchange produces it: an mppx merchant server answers a request
 * with a 402 `evm`/`charge` challenge (HMAC-bound id, realm), and mppx's EVM client signs the EIP-3009
 * authorization for it from `account`. Nothing here builds credential JSON by hand.
 */
export async function mppxCredential(options: MppxCredentialOptions): Promise<MppxCredentialResult> {
  const asset = options.asset ?? USDG_4663;
  const server = ServerMppx.create({
    realm: options.realm ?? 'merchant.example.com',
    secretKey: options.secretKey ?? 'merchant-secret-key-of-at-least-32-bytes!',
    methods: [
      evmServer.charge({
        currency: asset.address,
        chainId: asset.chainId,
        decimals: asset.decimals,
        authorization: { name: asset.name, version: asset.version },
        recipient: options.recipient,
        // The merchant hands settlement to the relay; this server only issues challenges here.
        settle: async () => {
          throw new Error('settlement is the relay’s job');
        },
      }),
    ],
  });
  const route = server.charge({
    amount: formatUnits(BigInt(options.amount), asset.decimals),
    ...(options.expires && { expires: options.expires.toISOString() }),
    ...(options.description && { description: options.description }),
    ...(options.externalId && { externalId: options.externalId }),
  });
  const answer = await route(new Request(`https://${options.realm ?? 'merchant.example.com'}/paid`));
  if (answer.status !== 402) throw new Error(`expected a 402 challenge, got ${answer.status}`);
  const response = answer.challenge as Response;

  const client = ClientMppx.create({
    polyfill: false,
    methods: [evmClient.charge({ account: options.account, authorization: { name: asset.name, version: asset.version } })],
  });
  const serialized = await client.createCredential(response);
  const credential = Credential.deserialize(serialized);
  const wwwAuthenticate = response.headers.get('www-authenticate')!;
  const challenge = Challenge.deserialize(wwwAuthenticate);
  return { credential, serialized, request: credential.challenge.request, challenge, wwwAuthenticate };
}
