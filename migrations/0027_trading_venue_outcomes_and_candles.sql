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
ALTER TABLE "trading_executions" DROP CONSTRAINT "trading_executions_status_check";--> statement-breakpoint
ALTER TABLE "trading_executions" DROP CONSTRAINT "trading_executions_trigger_check";--> statement-breakpoint
ALTER TABLE "trading_executions" ADD COLUMN "placing_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "trading_executions" ADD CONSTRAINT "trading_executions_status_check" CHECK ("trading_executions"."status" in ('completed', 'blocked', 'halted', 'failed', 'placing', 'rejected', 'skipped'));--> statement-breakpoint
ALTER TABLE "trading_executions" ADD CONSTRAINT "trading_executions_trigger_check" CHECK ("trading_executions"."trigger_type" in ('schedule', 'manual', 'flatten'));