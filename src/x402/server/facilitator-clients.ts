// The two ways a resource server reaches a facilitator: a direct call into this process's facilitator,
// or HTTP to FACILITATOR_URL (ours or any x402 v2 facilitator). Both throw the same typed errors.
import type { FacilitatorClient } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements, SettleResponse, SupportedResponse, VerifyResponse } from '@x402/core/types';
import { z } from 'zod';
import { ChainUnavailableError } from '../../chain/errors.js';
import type { Facilitator } from '../facilitator/facilitator.js';
import { FacilitatorUnavailableError, SettlementUnknownError } from './errors.js';

export function localFacilitatorClient(facilitator: Facilitator): FacilitatorClient {
  const unavailable = (error: unknown) => {
    throw error instanceof ChainUnavailableError ? new FacilitatorUnavailableError(error.message, { cause: error }) : error;
  };
  return {
    verify: (payload, requirements) => facilitator.verify(payload, requirements).catch(unavailable),
    settle: (payload, requirements) =>
      facilitator.settle(payload, requirements).catch((error: unknown) => {
        if (error instanceof ChainUnavailableError) throw new FacilitatorUnavailableError(error.message, { cause: error });
        // Anything else may have happened after the broadcast.
        throw new SettlementUnknownError(`settlement outcome unknown: ${(error as Error).message}`, '', { cause: error });
      }),
    getSupported: async () => facilitator.supported(),
  };
}

const verifyResponseSchema = z.looseObject({ isValid: z.boolean(), invalidReason: z.string().optional(), payer: z.string().optional() });
const settleResponseSchema = z.looseObject({
  success: z.boolean(),
  transaction: z.string(),
  network: z.string(),
  errorReason: z.string().optional(),
  payer: z.string().optional(),
});
const supportedSchema = z.looseObject({ kinds: z.array(z.looseObject({ x402Version: z.number(), scheme: z.string(), network: z.string() })) });

export interface HttpFacilitatorOptions {
  /** Resolved per call: the default facilitator URL is known only once its listener is up. */
  url: () => string;
  verifyTimeoutMs?: number;
  /** Keep above the facilitator's receipt wait, or settles time out into "unknown". */
  settleTimeoutMs?: number;
}

export function httpFacilitatorClient(options: HttpFacilitatorOptions): FacilitatorClient {
  const post = async (path: 'verify' | 'settle', payload: PaymentPayload, requirements: PaymentRequirements, timeoutMs: number) => {
    const body = JSON.stringify({ x402Version: payload.x402Version, paymentPayload: payload, paymentRequirements: requirements });
    let response: Response;
    try {
      response = await fetch(`${options.url()}/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      // A refused connection never reached the facilitator; a timeout or a reset may have.
      if (path === 'settle' && mayHaveArrived(error)) throw new SettlementUnknownError(`facilitator settle did not answer: ${describe(error)}`, '', { cause: error });
      throw new FacilitatorUnavailableError(`facilitator ${path} unreachable: ${describe(error)}`, { cause: error });
    }
    const text = await response.text().catch(() => '');
    const json = safeJson(text);
    if (response.ok || (response.status < 500 && json && typeof json === 'object' && ('isValid' in json || 'success' in json))) return json;
    if (response.status === 503 || response.status === 429 || response.status === 502 || (path === 'verify' && response.status >= 500)) {
      throw new FacilitatorUnavailableError(`facilitator ${path} answered ${response.status}`);
    }
    if (response.status >= 500) throw new SettlementUnknownError(`facilitator settle answered ${response.status}`);
    // A 4xx is the facilitator refusing this request for good: a definitive failure, not an outage.
    const message = `facilitator rejected the request (${response.status}): ${text.slice(0, 200)}`;
    return path === 'verify'
      ? { isValid: false, invalidReason: 'invalid_payload', invalidMessage: message }
      : { success: false, errorReason: 'invalid_payload', errorMessage: message, transaction: '', network: requirements.network };
  };
  return {
    async verify(payload, requirements): Promise<VerifyResponse> {
      const parsed = verifyResponseSchema.safeParse(await post('verify', payload, requirements, options.verifyTimeoutMs ?? 15_000));
      if (!parsed.success) throw new FacilitatorUnavailableError('facilitator verify returned an invalid body');
      return parsed.data as VerifyResponse;
    },
    async settle(payload, requirements): Promise<SettleResponse> {
      const parsed = settleResponseSchema.safeParse(await post('settle', payload, requirements, options.settleTimeoutMs ?? 60_000));
      if (!parsed.success) throw new SettlementUnknownError('facilitator settle returned an invalid body');
      return parsed.data as SettleResponse;
    },
    async getSupported(): Promise<SupportedResponse> {
      let response: Response;
      try {
        response = await fetch(`${options.url()}/supported`, { signal: AbortSignal.timeout(options.verifyTimeoutMs ?? 15_000) });
      } catch (error) {
        throw new FacilitatorUnavailableError(`facilitator supported unreachable: ${describe(error)}`, { cause: error });
      }
      const parsed = supportedSchema.safeParse(safeJson(await response.text()));
      if (!response.ok || !parsed.success) throw new FacilitatorUnavailableError(`facilitator supported answered ${response.status}`);
      return parsed.data as SupportedResponse;
    },
  };
}

function mayHaveArrived(error: unknown): boolean {
  const name = (error as { name?: string })?.name;
  if (name === 'TimeoutError' || name === 'AbortError') return true;
  const code = ((error as { cause?: { code?: string } })?.cause?.code ?? '') as string;
  return ['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CLOSED'].includes(code);
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string } })?.cause?.code;
  return `${(error as Error)?.message ?? String(error)}${cause ? ` (${cause})` : ''}`;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
