/**
 * An operator command refused: the CLI prints its message and the audit row says `refused` (not `error`).
 * Modules throw it from their own commands and import it from here; it lives apart from commands.ts so that
 * backup.ts, which commands.ts loads, need not import commands.ts back.
 */
export class AdminCommandError extends Error {}
