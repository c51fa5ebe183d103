ALTER TABLE "event_queues" ADD COLUMN "lease_expiries" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "event_schedules" ADD COLUMN "backfill" text DEFAULT 'latest' NOT NULL;--> statement-breakpoint
ALTER TABLE "event_schedules" ADD COLUMN "paused_at" timestamp with time zone;