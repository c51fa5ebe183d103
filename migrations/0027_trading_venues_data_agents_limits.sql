CREATE TABLE "trading_candles" (
	"symbol" text NOT NULL,
	"interval" text NOT NULL,
	"start" timestamp with time zone NOT NULL,
	"open" numeric(38, 18) NOT NULL,
	"high" numeric(38, 18) NOT NULL,
	"low" numeric(38, 18) NOT NULL,
	"close" numeric(38, 18) NOT NULL,
	"volume" numeric(38, 18) NOT NULL,
	"imported_at" timestamp with time zone NOT NULL,
	CONSTRAINT "trading_candles_symbol_interval_start_pk" PRIMARY KEY("symbol","interval","start"),
	CONSTRAINT "trading_candles_interval_check" CHECK ("trading_candles"."interval" in ('1m', '5m', '15m', '1h', '1d'))
);
--> statement-breakpoint
CREATE TABLE "trading_decisions" (
	"account_id" uuid NOT NULL,
	"version_hash" text NOT NULL,
	"inputs_digest" text NOT NULL,
	"record" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "trading_decisions_account_id_version_hash_inputs_digest_pk" PRIMARY KEY("account_id","version_hash","inputs_digest")
);
--> statement-breakpoint
CREATE TABLE "trading_provider_keys" (
	"account_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"sealed_key" text NOT NULL,
	"key_hint" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "trading_provider_keys_account_id_provider_pk" PRIMARY KEY("account_id","provider")
);
--> statement-breakpoint
ALTER TABLE "trading_executions" DROP CONSTRAINT "trading_executions_status_check";--> statement-breakpoint
ALTER TABLE "trading_executions" DROP CONSTRAINT "trading_executions_trigger_check";--> statement-breakpoint
ALTER TABLE "trading_accounts" ADD COLUMN "max_exposure_usd" double precision;--> statement-breakpoint
ALTER TABLE "trading_executions" ADD COLUMN "placing_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "trading_decisions" ADD CONSTRAINT "trading_decisions_account_id_trading_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."trading_accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "trading_provider_keys" ADD CONSTRAINT "trading_provider_keys_account_id_trading_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."trading_accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "trading_executions" ADD CONSTRAINT "trading_executions_status_check" CHECK ("trading_executions"."status" in ('completed', 'blocked', 'halted', 'failed', 'placing', 'rejected', 'skipped'));--> statement-breakpoint
ALTER TABLE "trading_executions" ADD CONSTRAINT "trading_executions_trigger_check" CHECK ("trading_executions"."trigger_type" in ('schedule', 'manual', 'flatten'));