ALTER TABLE "trading_executions" DROP CONSTRAINT "trading_executions_status_check";--> statement-breakpoint
ALTER TABLE "trading_executions" DROP CONSTRAINT "trading_executions_trigger_check";--> statement-breakpoint
ALTER TABLE "trading_executions" ADD COLUMN "placing_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "trading_executions" ADD CONSTRAINT "trading_executions_status_check" CHECK ("trading_executions"."status" in ('completed', 'blocked', 'halted', 'failed', 'placing', 'rejected', 'skipped'));--> statement-breakpoint
ALTER TABLE "trading_executions" ADD CONSTRAINT "trading_executions_trigger_check" CHECK ("trading_executions"."trigger_type" in ('schedule', 'manual', 'flatten'));