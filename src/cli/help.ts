// What the CLI says about itself: the list of commands (tollgate --help) and each command's help
// (tollgate <command> --help). Text only: printing it loads nothing else.

export const USAGE = `Usage: tollgate <command> (tollgate <command> --help for one command; tollgate --version)
  serve [--roles api,facilitator,relay,assets,worker]   run the service (default: every role)
  status                                                 the running instance's origins and background loops
  migrate                                                apply database migrations and exit
  mgmt-credential create --name NAME                     print a new wallet management credential once
  mgmt-credential revoke --id ID                         revoke a wallet management credential
  dev token --sub USER [--ttl SECONDS]                   print an identity token from the dev issuer
  dev fund ADDRESS AMOUNT                                mint devchain USDG (decimal) and gas to ADDRESS
  credits grant --sub USER --cents N [--note TEXT]       grant credits to a user (recorded with the note)
  admin COMMAND [--id ID] [--name NAME]                  run an operator command (e.g. merchant.disable --id ID)
  audit [--since TIME|DURATION] [--target ID] [--json]   the audit trail: operator commands and credential changes
  keys status | rotate-pepper | reseal [--batch N]       key rotation: where hashes and sealed keys stand; move them
  backup --out FILE                                      a consistent copy of the embedded database and devchain, while serving
  restore FILE                                           a backup into an empty data dir (then tollgate serve)
  trading import --symbol S --interval I FILE            import candles (CSV or freqtrade JSON) as market data`;

/** One command's help (`tollgate <command> --help`). */
export const HELP: Record<string, string> = {
  serve: `tollgate serve [--roles api,facilitator,relay,assets,worker]
  Runs the service: each origin's listener and (role worker) the background loops. Default: every role.
  Configuration comes from the environment (README, Configuration); data lives in $TOLLGATE_DATA_DIR (./.data),
  one instance per data dir (a second exits 3, naming the running one).`,
  status: `tollgate status
  Asks the instance running on $TOLLGATE_DATA_DIR (through its admin socket) for its origins, roles and each
  background loop's last run, lag, consecutive failures and last error. Exit 1 when no instance answers.`,
  migrate: `tollgate migrate
  Applies the database migrations and exits (they also run at every start).`,
  'mgmt-credential': `tollgate mgmt-credential create --name NAME   print a new wallet management credential (shown once)
tollgate mgmt-credential revoke --id ID       revoke one`,
  dev: `tollgate dev token --sub USER [--ttl SECONDS]   an identity token from the dev issuer (default 12 h)
tollgate dev fund ADDRESS AMOUNT               mint devchain USDG (decimal amount) and gas to ADDRESS`,
  credits: `tollgate credits grant --sub USER --cents N [--note TEXT]
  Grants N credit cents to the identity-token subject USER, from the grants account, recorded with the note
  (default "operator grant"). Prints the balance after.`,
  trading: `tollgate trading import --symbol SYMBOL --interval 1m|5m|15m|1h|1d FILE
  Imports candles into the data source \`imported\` (docs/trading.md, "Imported market data"). FILE is the common
  exchange CSV export (timestamp,open,high,low,close,volume; Unix seconds, Unix ms or ISO 8601 timestamps) or
  freqtrade's JSON ([[ms, open, high, low, close, volume], ...]). A candle already imported is replaced.`,
  audit: `tollgate audit [--since TIME|DURATION] [--target ID] [--limit N] [--json]
  The audit trail, oldest first: every operator command (this CLI) and every credential or key change through
  the API, with when, who (principal kind and id), what, the target, the request id and the outcome.
  --since 2026-05-01T00:00:00Z or a duration back from now (30m, 24h, 7d); --target an id (a key, a merchant…);
  --limit the newest N (default 100); --json one JSON object per line. Rows are append-only (docs/operations.md).
  Every other command takes its request id from TOLLGATE_REQUEST_ID (or makes one), and its row keeps it.`,
  keys: `tollgate keys status
tollgate keys rotate-pepper [--batch N]
tollgate keys reseal [--batch N]
  Rotating SECRET_PEPPER or WALLET_MASTER_KEY without downtime (docs/operations.md, Key rotation). status: per
  column, how many secret hashes are under the current pepper, the previous one (SECRET_PEPPER_PREVIOUS), legacy
  or another, and how many sealed keys under the current and previous master key (WALLET_MASTER_KEY_PREVIOUS).
  rotate-pepper re-hashes the rows under the previous pepper; reseal seals again what the previous master key
  sealed. Both run in batches of N (default 500) with a progress line each, can be stopped and run again (they
  resume where they stopped), and end once nothing is left under the previous value: then remove it.`,
  backup: `tollgate backup --out FILE
  Writes FILE (.tar.gz, mode 0600; it holds the dev secrets of the data dir): the embedded database (PGlite) and the
  devchain's state taken at one moment, while the instance serves, and the rest of the data dir (secrets, images,
  agents' volumes). Through the running instance, or with none running from the data dir itself. With DATABASE_URL
  use pg_dump instead (docs/operations.md, Backups).`,
  restore: `tollgate restore FILE
  Unpacks a backup into $TOLLGATE_DATA_DIR, which must be empty or not exist, and loads its database. Then
  \`tollgate serve\` (npm start) on it starts where the backup was taken. Embedded only (not with DATABASE_URL).`,
  admin: `tollgate admin COMMAND [--id ID] [--name NAME]
  Runs one operator command on the running instance (or on the data dir with none running) and prints its JSON
  answer. Every command but the reads (marked read) leaves an audit row (tollgate audit). The commands:
    merchant.disable --id ID, merchant.enable --id ID       a merchant's intents stop (403 merchant_disabled) or resume
    project.disable --id ID, project.enable --id ID         every key of the project refused (403) or accepted again
    project-key.disable --id ID, project-key.revoke --id ID one project API key refused (403 disabled, 401 revoked)
    wallet.retry-provisioning --id ID                       retry a wallet whose provisioning keeps failing, now
    wallet.payments-reconciler                              (read) the pay-and-call reconciler's last run, lag, errors
    intents.stuck                                           (read) intents settling for over 10 minutes
    intents.resolve --id ID                                 resolve one from the chain now
    mgmt-credential.create --name NAME, mgmt-credential.revoke --id ID   (as tollgate mgmt-credential)
    dev.token --sub USER, dev.fund --address A --amount N   (as tollgate dev token / dev fund)
    credits.grant --sub USER --cents N                      (as tollgate credits grant)
    trading.import-candles                                  (as tollgate trading import)
    audit.list                                              (read; as tollgate audit)
    keys.status, keys.rotate-pepper, keys.reseal            (keys.status read; as tollgate keys)
    backup.create --out FILE                                (as tollgate backup)`,
};
