ALTER TABLE "trading_executions" DROP CONSTRAINT "trading_executions_tick_unique";--> statement-breakpoint
ALTER TABLE "trading_executions" ADD COLUMN "leg" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "trading_executions" ADD CONSTRAINT "trading_executions_tick_unique" UNIQUE("runtime_id","trigger_type","scheduled_at","leg");