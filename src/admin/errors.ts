/** An operator command refused: the CLI prints its message and the audit row says `refused` (not `error`). */
export class AdminCommandError extends Error {}
