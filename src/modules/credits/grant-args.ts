// A credits grant's arguments, as the admin command `credits.grant` and `tollgate credits grant` take them: the CLI
// checks them before it opens an instance (seconds offline), the admin command again for any other caller.

export interface GrantArgs {
  sub: string;
  cents: number;
  note: string;
}

/** The grant the arguments ask for, or what is wrong with them (worded for the command line). */
export function parseGrantArgs(args: Record<string, unknown>): GrantArgs | { refused: string } {
  if (typeof args.sub !== 'string' || !args.sub) return { refused: '--sub is required' };
  const cents = Number(args.cents);
  if (!Number.isInteger(cents) || cents < 1) return { refused: '--cents must be a whole number of cents ≥ 1' };
  return { sub: args.sub, cents, note: typeof args.note === 'string' && args.note ? args.note : 'operator grant' };
}
