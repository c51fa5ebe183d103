CREATE TABLE "trading_accounts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"name" text NOT NULL,
	"type" text NOT NULL,
	"wallet_id" uuid NOT NULL,
	"kill_switch" text DEFAULT 'off' NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "trading_accounts_kill_switch_check" CHECK ("trading_accounts"."kill_switch" in ('off', 'halt', 'reduce_only'))
);
--> statement-breakpoint
CREATE TABLE "trading_executions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"runtime_id" uuid NOT NULL,
	"trigger_type" text NOT NULL,
	"scheduled_at" timestamp with time zone NOT NULL,
	"status" text NOT NULL,
	"attempt_count" integer NOT NULL,
	"strategy_version_hash" text NOT NULL,
	"inputs_digest" text,
	"decision" jsonb,
	"risk_assessment" jsonb,
	"order" jsonb,
	"error" jsonb,
	"created_at" timestamp with time zone NOT NULL,
	"completed_at" timestamp with time zone,
	CONSTRAINT "trading_executions_tick_unique" UNIQUE("runtime_id","trigger_type","scheduled_at"),
	CONSTRAINT "trading_executions_status_check" CHECK ("trading_executions"."status" in ('completed', 'blocked', 'halted', 'failed')),
	CONSTRAINT "trading_executions_trigger_check" CHECK ("trading_executions"."trigger_type" in ('schedule', 'manual'))
);
--> statement-breakpoint
CREATE TABLE "trading_runtimes" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"account_id" uuid NOT NULL,
	"strategy_version_id" uuid NOT NULL,
	"name" text NOT NULL,
	"cron_expression" text NOT NULL,
	"fund_limit_usd" double precision NOT NULL,
	"max_leverage" double precision NOT NULL,
	"max_drawdown_percent" double precision NOT NULL,
	"idempotency_key" text NOT NULL,
	"request_hash" text NOT NULL,
	"status" text NOT NULL,
	"status_reason" text,
	"schedule_state" text,
	"schedule_id" uuid,
	"book" jsonb NOT NULL,
	"book_version" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "trading_runtimes_idempotency_unique" UNIQUE("user_id","idempotency_key"),
	CONSTRAINT "trading_runtimes_status_check" CHECK ("trading_runtimes"."status" in ('provisioning', 'active', 'paused', 'stopped', 'needs_review', 'failed')),
	CONSTRAINT "trading_runtimes_limits_check" CHECK ("trading_runtimes"."fund_limit_usd" > 0 and "trading_runtimes"."max_leverage" > 0 and "trading_runtimes"."max_drawdown_percent" > 0)
);
--> statement-breakpoint
CREATE TABLE "trading_strategies" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"name" text NOT NULL,
	"visibility" text NOT NULL,
	"latest_version" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "trading_strategies_visibility_check" CHECK ("trading_strategies"."visibility" in ('private', 'public'))
);
--> statement-breakpoint
CREATE TABLE "trading_strategy_versions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"strategy_id" uuid NOT NULL,
	"number" integer NOT NULL,
	"kind" text NOT NULL,
	"schema_version" integer NOT NULL,
	"definition" jsonb NOT NULL,
	"content_hash" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "trading_strategy_versions_number_unique" UNIQUE("strategy_id","number")
);
--> statement-breakpoint
ALTER TABLE "trading_executions" ADD CONSTRAINT "trading_executions_runtime_id_trading_runtimes_id_fk" FOREIGN KEY ("runtime_id") REFERENCES "public"."trading_runtimes"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "trading_runtimes" ADD CONSTRAINT "trading_runtimes_account_id_trading_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."trading_accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "trading_runtimes" ADD CONSTRAINT "trading_runtimes_strategy_version_id_trading_strategy_versions_id_fk" FOREIGN KEY ("strategy_version_id") REFERENCES "public"."trading_strategy_versions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "trading_strategy_versions" ADD CONSTRAINT "trading_strategy_versions_strategy_id_trading_strategies_id_fk" FOREIGN KEY ("strategy_id") REFERENCES "public"."trading_strategies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "trading_accounts_user_idx" ON "trading_accounts" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "trading_executions_runtime_idx" ON "trading_executions" USING btree ("runtime_id","id");--> statement-breakpoint
CREATE INDEX "trading_runtimes_user_idx" ON "trading_runtimes" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "trading_runtimes_unaligned_idx" ON "trading_runtimes" USING btree ("id") WHERE "trading_runtimes"."schedule_state" is distinct from "trading_runtimes"."status";--> statement-breakpoint
CREATE INDEX "trading_strategies_user_idx" ON "trading_strategies" USING btree ("user_id","id");