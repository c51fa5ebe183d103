// The service's time, as a page can know it: the `Date` header of this origin's answers (RFC 9110 §6.6.1:
// an origin server with a clock sends it; Node's HTTP server always does, and test/web/checkout-clock.test.ts
// checks the 402 of a pay URL carries it), plus `Age` when a cache answered. A payer's clock may be hours
// off: what the checkout signs (an authorization's validBefore) and how it reads an expiry follow this instead.

let offsetMs: number | null = null;

/** Takes the service's time from an answer of this origin; one without a readable Date changes nothing. */
export function learnServerTime(response: Response, receivedAt = Date.now()): void {
  const date = Date.parse(response.headers.get('date') ?? '');
  if (Number.isNaN(date)) return;
  const age = Number(response.headers.get('age') ?? '0');
  // Date has whole seconds: the service sent it within the second after, so take that second's middle.
  const next = date + (Number.isFinite(age) && age > 0 ? age * 1000 : 0) + 500 - receivedAt;
  // Answers disagree by that rounding and their latency: keep the first, unless the clocks moved apart.
  if (offsetMs === null || Math.abs(next - offsetMs) > 2000) offsetMs = next;
}

/** A time of this browser's clock (ms), on the service's clock; unchanged until an answer was read. */
export const onServerClock = (localMs: number) => localMs + (offsetMs ?? 0);

/** Now on the service's clock (ms). */
export const serverNow = () => onServerClock(Date.now());
