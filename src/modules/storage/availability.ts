import type { AppContext } from '../../context.js';
import type { ImageStore } from './image-store.js';

/** How long one answer stands: the config endpoint is public and polled, the checks touch other systems. */
const CACHE_MS = 2_000;
const CHECK_TIMEOUT_MS = 2_000;

/**
 * Whether an upload can be taken now: someone to pay, an image store that answers, and a facilitator
 * that settles `exact` on our network. Checked for real (cached briefly), so `available: false`
 * in the config means an upload would answer 503.
 */
export class Availability {
  #cached: { at: number; value: Promise<boolean> } | null = null;

  constructor(
    private readonly ctx: AppContext,
    private readonly images: ImageStore,
    private readonly payTo: string | null,
  ) {}

  available(): Promise<boolean> {
    const now = Date.now();
    if (this.#cached && now - this.#cached.at < CACHE_MS) return this.#cached.value;
    const value = this.check().catch((error: unknown) => {
      this.ctx.log.warn({ err: error }, 'storage availability check failed');
      return false;
    });
    this.#cached = { at: now, value };
    return value;
  }

  private async check(): Promise<boolean> {
    if (!this.payTo) return false;
    const [store, facilitator] = await Promise.all([withTimeout(this.images.check()), withTimeout(this.facilitatorSettlesHere())]);
    return store.ok && facilitator;
  }

  private async facilitatorSettlesHere(): Promise<boolean> {
    const supported = await this.ctx.x402.facilitator().getSupported();
    return supported.kinds.some((kind) => kind.scheme === 'exact' && kind.network === this.ctx.x402.network);
  }
}

function withTimeout<T>(promise: Promise<T>): Promise<T> {
  return Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('availability check timed out')), CHECK_TIMEOUT_MS).unref())]);
}
