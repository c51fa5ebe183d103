// The payer's side of x402 v2 `exact` on EVM, in the page: read the 402 challenge, have the injected
// wallet (EIP-1193) sign the EIP-3009 TransferWithAuthorization the challenge asks for (EIP-712), and
// build the PAYMENT-SIGNATURE header, exactly as the official @x402/evm client does.

export interface Requirement {
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra?: { name?: string; version?: string };
}

export interface Challenge {
  x402Version: number;
  resource: unknown;
  accepts: Requirement[];
  error?: string;
  extensions?: unknown;
}

export interface Eip1193 {
  /** params is an array for most methods, an object for a few (wallet_watchAsset, EIP-747). */
  request(args: { method: string; params?: unknown[] | Record<string, unknown> }): Promise<unknown>;
}

const utf8ToBase64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));
const base64ToUtf8 = (b64: string) => new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));

/** The challenge of a 402: the PAYMENT-REQUIRED header (base64 JSON), else the JSON body. */
export function challengeOf(response: Response, body: unknown): Challenge {
  const header = response.headers.get('payment-required');
  return (header ? JSON.parse(base64ToUtf8(header)) : body) as Challenge;
}

export const chainIdOf = (network: string) => {
  const match = /^eip155:(\d+)$/.exec(network);
  if (!match) throw new Error(`This page pays on EVM networks only, not ${network}`);
  return Number(match[1]);
};

function randomNonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `0x${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** The typed data eth_signTypedData_v4 signs for a requirement (USDG's EIP-3009 domain from `extra`). */
export function transferTypedData(requirement: Requirement, authorization: Record<string, string>) {
  const { name, version } = requirement.extra ?? {};
  if (!name || !version) throw new Error('The payment request does not name the token (EIP-712 name and version)');
  return {
    types: {
      EIP712Domain: [
        { name: 'name', type: 'string' },
        { name: 'version', type: 'string' },
        { name: 'chainId', type: 'uint256' },
        { name: 'verifyingContract', type: 'address' },
      ],
      TransferWithAuthorization: [
        { name: 'from', type: 'address' },
        { name: 'to', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'validAfter', type: 'uint256' },
        { name: 'validBefore', type: 'uint256' },
        { name: 'nonce', type: 'bytes32' },
      ],
    },
    primaryType: 'TransferWithAuthorization',
    domain: { name, version, chainId: chainIdOf(requirement.network), verifyingContract: requirement.asset },
    message: authorization,
  };
}

/**
 * Signs the requirement with the wallet's account `from`; answers the PAYMENT-SIGNATURE header value. `now`
 * (Unix seconds) is the service's time, which the facilitator's checks follow: validBefore is now +
 * maxTimeoutSeconds, valid only as far ahead as that.
 */
export async function signPayment(wallet: Eip1193, from: string, challenge: Challenge, requirement: Requirement, now: number): Promise<string> {
  const authorization = {
    from,
    to: requirement.payTo,
    value: requirement.amount,
    validAfter: '0',
    validBefore: String(now + requirement.maxTimeoutSeconds),
    nonce: randomNonce(),
  };
  const signature = (await wallet.request({ method: 'eth_signTypedData_v4', params: [from, JSON.stringify(transferTypedData(requirement, authorization))] })) as string;
  const payload = { x402Version: challenge.x402Version, payload: { authorization, signature }, resource: challenge.resource, accepted: requirement, ...(challenge.extensions ? { extensions: challenge.extensions } : {}) };
  return utf8ToBase64(JSON.stringify(payload));
}
