/** True when the error (or one it wraps: drizzle wraps driver errors) has this SQLSTATE and names the constraint. */
function hasSqlState(error: unknown, sqlState: string, constraint?: string): boolean {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current && typeof current === 'object' && !seen.has(current)) {
    seen.add(current);
    const candidate = current as { code?: string; constraint?: string; message?: string; cause?: unknown };
    if (candidate.code === sqlState && (!constraint || candidate.constraint === constraint || candidate.message?.includes(constraint))) return true;
    current = candidate.cause;
  }
  return false;
}

/** A unique violation (23505) of the named constraint: the database refused a duplicate. */
export const isUniqueViolation = (error: unknown, constraint: string) => hasSqlState(error, '23505', constraint);
/** A foreign-key violation (23503): the referenced row does not exist. */
export const isForeignKeyViolation = (error: unknown) => hasSqlState(error, '23503');
/** A check violation (23514) of the named constraint: the database refused a row its rule does not allow. */
export const isCheckViolation = (error: unknown, constraint: string) => hasSqlState(error, '23514', constraint);
