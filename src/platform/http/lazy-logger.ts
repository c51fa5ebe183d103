import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type ChildOptions = { level?: string } & Record<string, unknown>;

/**
 * Fastify builds a child logger per request; pino's child() costs more than a whole /health
 * answer. This defers it until the request actually logs something, which most never do.
 * A class, so a request costs one small object and no closures.
 *
 * It is Fastify's own logger (`lazyLogger`, given as `loggerInstance`), not a `childLoggerFactory`: Fastify
 * checks every child a custom factory makes (seven property reads by name, each a megamorphic lookup, plus
 * an array and a closure: ≈ 3 % of GET /health's CPU, bench/RESULTS.md), while its default factory calls
 * this class's `child()` unchecked.
 */
class LazyChildLogger {
  #child: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: FastifyBaseLogger | LazyChildLogger,
    private readonly bindings: Record<string, unknown>,
    private readonly options?: ChildOptions,
  ) {}

  /** The serializers Fastify merges into its own (pino's symbol): the parent's, e.g. the root's error redaction. */
  get [pino.symbols.serializersSym](): unknown {
    return (this.parent as unknown as Record<symbol, unknown>)[pino.symbols.serializersSym];
  }

  get level(): string {
    return this.#child?.level ?? this.options?.level ?? this.parent.level;
  }

  set level(value: string) {
    this.real().level = value;
  }

  isLevelEnabled(level: string): boolean {
    if (this.#child !== null || this.options?.level !== undefined) return (this.real() as unknown as pino.Logger).isLevelEnabled(level);
    return (this.parent as { isLevelEnabled?(l: string): boolean }).isLevelEnabled?.(level) ?? true;
  }

  /** A child as lazy as this one: made for real only when it, or a child of it, writes. */
  child(bindings: Record<string, unknown>, options?: ChildOptions): FastifyBaseLogger {
    return new LazyChildLogger(this, bindings, copyOf(options)) as unknown as FastifyBaseLogger;
  }

  silent(): void {}
  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }

  private write(level: Level, args: unknown[]): void {
    if (!this.isLevelEnabled(level)) return;
    (this.real()[level] as (...a: unknown[]) => void)(...args);
  }

  /** The pino logger this one stands for, made (once) from the parent's. */
  real(): FastifyBaseLogger {
    if (this.#child === null) {
      const parent = this.parent instanceof LazyChildLogger ? this.parent.real() : this.parent;
      this.#child = parent.child(this.bindings, this.options);
    }
    return this.#child;
  }
}

/** The options as they are now: Fastify changes the object it passed after the call (createPinoLogger). None for `{}`. */
function copyOf(options: ChildOptions | undefined): ChildOptions | undefined {
  for (const _ in options) return { ...options };
  return undefined;
}

/** Fastify's logger for one origin (`loggerInstance`): each request's child of it is made only when it writes. */
export const lazyLogger = (logger: FastifyBaseLogger): FastifyBaseLogger => new LazyChildLogger(logger, {}) as unknown as FastifyBaseLogger;
