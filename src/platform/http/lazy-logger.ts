import type { FastifyBaseLogger } from 'fastify';

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;

/**
 * Fastify builds a child logger per request; pino's child() costs more than a whole /health
 * answer. This defers it until the request actually logs something, which most never do.
 */
export function lazyChildLogger(parent: FastifyBaseLogger, bindings: Record<string, unknown>): FastifyBaseLogger {
  let child: FastifyBaseLogger | null = null;
  const real = () => (child ??= parent.child(bindings));
  const lazy = {
    get level() {
      return parent.level;
    },
    set level(value: string) {
      real().level = value;
    },
    silent: () => {},
    child: (more: Record<string, unknown>, options?: object) => real().child(more, options),
  } as Record<string, unknown>;
  for (const level of LEVELS) {
    lazy[level] = (...args: unknown[]) => {
      if ((parent as unknown as { isLevelEnabled?(l: string): boolean }).isLevelEnabled?.(level) === false) return;
      (real()[level] as (...a: unknown[]) => void)(...args);
    };
  }
  return lazy as unknown as FastifyBaseLogger;
}
