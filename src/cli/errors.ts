// The CLI's own refusals: src/main.ts turns each into its exit code (2 a usage error, 3 the wrong instance).

export class UsageError extends Error {}

/** Refused before it could mislead: the CLI would otherwise act on a data dir no running instance uses. */
export class WrongInstanceError extends Error {}
