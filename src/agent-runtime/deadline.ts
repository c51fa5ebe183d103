/**
 * A signal that aborts with a TimeoutError after `ms`, or when `also` aborts. Not `AbortSignal.any` over
 * `AbortSignal.timeout`: Node 20's `any` holds its sources weakly, so a timeout signal nothing else holds is
 * collected by the next GC and its deadline never comes (a fetch to a hung peer then waits forever).
 */
export function deadlineSignal(ms: number, also?: AbortSignal): AbortSignal {
  const controller = new AbortController();
  // The timer holds the controller until it fires; unref'd like AbortSignal.timeout's, so it keeps no process up.
  setTimeout(() => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms).unref();
  return also ? AbortSignal.any([controller.signal, also]) : controller.signal;
}
