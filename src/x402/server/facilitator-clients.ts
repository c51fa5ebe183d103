// The two ways a resource server reaches a facilitator: a direct call into this process's facilitator,
// or HTTP to FACILITATOR_URL (ours or any x402 v2 facilitator). Both throw the same typed errors.
import type { FacilitatorClient } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements, SettleResponse, SupportedResponse, VerifyResponse } from '@x402/core/types';
import { z } from 'zod';
import { ChainUnavailableError } from '../../chain/errors.js';
import type { Facilitator } from '../facilitator/facilitator.js';
import { SettleBudgetError } from '../facilitator/settle-policy.js';
import { FacilitatorUnavailableError, SettlementUnknownError } from './errors.js';
import { parseGuardedJson } from '../../platform/json-guard.js';
import { errorText, redactText } from '../../platform/log-redaction.js';
import { requestIdHeader, type Caller } from '../../platform/request-context.js';

/**
 * The SDK's facilitator client, told which request each verify and settle is for (`caller`): the facilitator's
 * log lines of that call carry its id (passed over HTTP as X-Request-Id), its gas is labelled with its route.
 */
export interface CallerFacilitatorClient extends FacilitatorClient {
  verify(payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller): Promise<VerifyResponse>;
  settle(payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller): Promise<SettleResponse>;
}

export function localFacilitatorClient(facilitator: Facilitator): CallerFacilitatorClient {
  const unavailable = (error: unknown) => {
    throw error instanceof ChainUnavailableError ? new FacilitatorUnavailableError(error.message, { cause: error }) : error;
  };
  return {
    verify: (payload, requirements, caller) => facilitator.verify(payload, requirements, caller).catch(unavailable),
    settle: (payload, requirements, caller) =>
      facilitator.settle(payload, requirements, caller).catch((error: unknown) => {
        // Nothing was sent: the chain did not answer, the gas float is low, or a settle budget is spent.
        if (error instanceof ChainUnavailableError || error instanceof SettleBudgetError) throw new FacilitatorUnavailableError(error.message, { cause: error });
        // Anything else may have happened after the broadcast. The message is kept with a wallet's payment
        // (its `error`), so a chain error's text loses the RPC URL's key here (log-redaction.ts).
        throw new SettlementUnknownError(`settlement outcome unknown: ${errorText(error)}`, '', { cause: error });
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

export function httpFacilitatorClient(options: HttpFacilitatorOptions): CallerFacilitatorClient {
  const post = async (path: 'verify' | 'settle', payload: PaymentPayload, requirements: PaymentRequirements, timeoutMs: number, caller: Caller | undefined) => {
    const body = JSON.stringify({ x402Version: payload.x402Version, paymentPayload: payload, paymentRequirements: requirements });
    let response: Response;
    try {
      response = await fetch(`${options.url()}/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...requestIdHeader(caller) },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      // Only a connection that was never opened proves the settle was not sent; a timeout or a reset may come after.
      if (path === 'settle' && !neverSent(error)) throw new SettlementUnknownError(`facilitator settle did not answer: ${describe(error)}`, '', { cause: error });
      throw new FacilitatorUnavailableError(`facilitator ${path} unreachable: ${describe(error)}`, { cause: error });
    }
    const text = await response.text().catch(() => '');
    const json = safeJson(text);
    if (response.ok || (response.status < 500 && json && typeof json === 'object' && ('isValid' in json || 'success' in json))) return json;
    // Verify never moves money: any 5xx is an outage. A settle 5xx may come from a proxy after the
    // facilitator broadcast, so only a 429 or our facilitator's own "nothing was sent" proves nothing happened.
    if (response.status === 429 || (response.status >= 500 && (path === 'verify' || nothingSent(json)))) {
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
    async verify(payload, requirements, caller): Promise<VerifyResponse> {
      const parsed = verifyResponseSchema.safeParse(await post('verify', payload, requirements, options.verifyTimeoutMs ?? 15_000, caller));
      if (!parsed.success) throw new FacilitatorUnavailableError('facilitator verify returned an invalid body');
      return parsed.data as VerifyResponse;
    },
    async settle(payload, requirements, caller): Promise<SettleResponse> {
      const parsed = settleResponseSchema.safeParse(await post('settle', payload, requirements, options.settleTimeoutMs ?? 60_000, caller));
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

// Failures before a connection exists (refused, DNS, bad URL): the request cannot have been written.
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'ERR_INVALID_URL']);

/** Anything else (timeout, reset, closed socket, unknown) may have reached the facilitator. */
function neverSent(error: unknown): boolean {
  const cause = (error as { cause?: { code?: string; errors?: { code?: string }[] } })?.cause;
  // Happy eyeballs: an AggregateError of one failed connect per address.
  const codes = cause?.errors?.length ? cause.errors.map((e) => e?.code) : [cause?.code];
  return codes.every((code) => code !== undefined && NEVER_SENT.has(code));
}

/** Our facilitator's 503 `chain_unavailable` is only answered when nothing was broadcast. */
function nothingSent(json: unknown): boolean {
  return (json as { error?: { code?: unknown } } | null)?.error?.code === 'chain_unavailable';
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string } })?.cause?.code;
  return redactText(`${(error as Error)?.message ?? String(error)}${cause ? ` (${cause})` : ''}`);
}

/** A remote facilitator's answer through the JSON guard: too deep, too big or malformed reads as no answer. */
function safeJson(text: string): unknown {
  try {
    return parseGuardedJson(text);
  } catch {
    return null;
  }
}
