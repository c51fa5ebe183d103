/** The object without its undefined fields (a stored record carries only what it has; defaults spread under it stay). */
export const definedOnly = <T extends object>(value: T): T => Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
