CREATE TABLE "trading_backtest_jobs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"strategy_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"input" jsonb NOT NULL,
	"status" text NOT NULL,
	"cancel_requested" boolean DEFAULT false NOT NULL,
	"progress_done" integer DEFAULT 0 NOT NULL,
	"progress_total" integer NOT NULL,
	"checkpoint" jsonb,
	"result" jsonb,
	"error" text,
	"lease_owner" text,
	"lease_expires_at" timestamp with time zone,
	"attempts" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone,
	CONSTRAINT "trading_backtest_jobs_kind_check" CHECK ("trading_backtest_jobs"."kind" in ('backtest', 'optimisation')),
	CONSTRAINT "trading_backtest_jobs_status_check" CHECK ("trading_backtest_jobs"."status" in ('queued', 'running', 'succeeded', 'failed', 'cancelled'))
);
--> statement-breakpoint
ALTER TABLE "trading_backtest_jobs" ADD CONSTRAINT "trading_backtest_jobs_strategy_id_trading_strategies_id_fk" FOREIGN KEY ("strategy_id") REFERENCES "public"."trading_strategies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "trading_backtest_jobs_user_idx" ON "trading_backtest_jobs" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "trading_backtest_jobs_claim_idx" ON "trading_backtest_jobs" USING btree ("created_at") WHERE "trading_backtest_jobs"."status" in ('queued', 'running');