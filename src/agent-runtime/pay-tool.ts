import { deadlineSignal } from './deadline.js';
import type { Tool } from './model-types.js';

/**
 * runtime_b's tool: call an HTTP resource and pay its x402 price from the agent's own wallet. The runtime
 * holds no wallet credential: it asks the service (with its own token), which pays within the budget the
 * user set and answers what happened.
 */
/** The most of an upstream's body the model is shown. */
const MAX_BODY_CHARS = 16 * 1024;

export function payAndCallTool(serviceUrl: string, agentId: string, token: string): Tool {
  return {
    name: 'pay_and_call',
    description:
      "Call an HTTP resource; if it asks for an x402 payment, pay it from this agent's own wallet within the budget its user set. " +
      "Answers the resource's status and body and the payment made, or why nothing was paid.",
    parameters: {
      type: 'object',
      properties: {
        url: { type: 'string', description: 'the resource URL (https, or this service)' },
        method: { type: 'string', enum: ['GET', 'POST'] },
        maxAmount: { type: 'string', description: "the most to pay for this call, in atomic units of the chain's asset" },
        approvalId: { type: 'string', description: "when an earlier call of this URL answered approval_pending and its user approved it: that approval's id" },
      },
      required: ['url'],
    },
    async run(input, turn) {
      const response = await fetch(`${serviceUrl}/agents/${agentId}/runtime/pay-and-call`, {
        method: 'POST',
        // The turn's request id goes along: the payment is recorded under it (one id across the logs).
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(turn.requestId ? { 'x-request-id': turn.requestId } : {}) },
        body: JSON.stringify({
          url: input.url,
          method: input.method ?? 'GET',
          ...(typeof input.maxAmount === 'string' ? { maxAmount: input.maxAmount } : {}),
          ...(typeof input.approvalId === 'string' ? { approvalId: input.approvalId } : {}),
          ...(turn.turnId ? { turnId: turn.turnId } : {}),
        }),
        signal: deadlineSignal(60_000, turn.signal),
      });
      const answer = (await response.json().catch(() => null)) as { data?: any; message?: string } | null; // eslint-disable-line @typescript-eslint/no-explicit-any
      if (!response.ok) {
        // Why nothing was paid, in the service's words, and what the agent may still pay (its budget, the policy's limits).
        const { reason, remaining, limits } = answer?.data ?? {};
        return JSON.stringify({ paid: false, refused: reason ?? `status ${response.status}`, message: answer?.message ?? '', ...(remaining === undefined ? {} : { remaining }), ...(limits === undefined ? {} : { limits }) });
      }
      // The wallet's spend policy wants a human to approve this payment first: nothing was paid.
      if (answer!.data.approval) return JSON.stringify({ paid: false, refused: 'approval_pending', approval: answer!.data.approval });
      const { upstream, payment } = answer!.data;
      const text = typeof upstream.body === 'string' ? upstream.body : JSON.stringify(upstream.body);
      return JSON.stringify({
        status: upstream.status,
        // A large body is cut: the result goes into every later turn of the session (and its token budget).
        body: text.length <= MAX_BODY_CHARS ? upstream.body : `${text.slice(0, MAX_BODY_CHARS)}… (cut: ${text.length} characters in all)`,
        // `transaction` is the chain's; a payment still pending carries the seller's word for it.
        payment: payment && { status: payment.status, amount: payment.amount, transaction: payment.transaction, sellerTransaction: payment.settlement?.transaction ?? null },
      });
    },
  };
}
