CREATE TABLE "event_queues" (
	"id" uuid PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"name" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"default_lease_seconds" integer NOT NULL,
	"max_attempts" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "event_queues_project_name_unique" UNIQUE("project_id","name")
);
--> statement-breakpoint
CREATE TABLE "event_schedules" (
	"id" uuid PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"queue_id" uuid NOT NULL,
	"external_id" text NOT NULL,
	"name" text NOT NULL,
	"cron_expression" text NOT NULL,
	"timezone" text NOT NULL,
	"payload" jsonb NOT NULL,
	"overlap_policy" text NOT NULL,
	"max_concurrency" integer,
	"max_event_age_seconds" integer,
	"sync_status" text NOT NULL,
	"revision" integer NOT NULL,
	"synced_revision" integer,
	"last_error" text,
	"next_fire_at" timestamp with time zone,
	"last_fired_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "event_schedules_project_external_unique" UNIQUE("project_id","external_id")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" uuid PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"queue_id" uuid NOT NULL,
	"schedule_id" uuid,
	"scheduled_for" timestamp with time zone,
	"deduplication_key" text,
	"payload" jsonb NOT NULL,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"max_attempts" integer NOT NULL,
	"available_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone,
	"lease_token_hash" text,
	"lease_expires_at" timestamp with time zone,
	"last_error" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "event_schedules" ADD CONSTRAINT "event_schedules_queue_id_event_queues_id_fk" FOREIGN KEY ("queue_id") REFERENCES "public"."event_queues"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_queue_id_event_queues_id_fk" FOREIGN KEY ("queue_id") REFERENCES "public"."event_queues"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "event_schedules_pending_idx" ON "event_schedules" USING btree ("updated_at") WHERE "event_schedules"."sync_status" = 'pending';--> statement-breakpoint
CREATE INDEX "event_schedules_due_idx" ON "event_schedules" USING btree ("next_fire_at") WHERE "event_schedules"."sync_status" = 'synced';--> statement-breakpoint
CREATE INDEX "events_claim_idx" ON "events" USING btree ("queue_id","available_at","id") WHERE "events"."status" in ('available', 'leased');--> statement-breakpoint
CREATE UNIQUE INDEX "events_queue_dedup_unique" ON "events" USING btree ("queue_id","deduplication_key") WHERE "events"."deduplication_key" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "events_schedule_tick_unique" ON "events" USING btree ("schedule_id","scheduled_for") WHERE "events"."schedule_id" is not null;--> statement-breakpoint
CREATE INDEX "events_schedule_open_idx" ON "events" USING btree ("schedule_id") WHERE "events"."schedule_id" is not null and "events"."status" in ('available', 'leased');--> statement-breakpoint
CREATE INDEX "events_queue_status_idx" ON "events" USING btree ("queue_id","status","id");--> statement-breakpoint
CREATE INDEX "events_leased_idx" ON "events" USING btree ("available_at") WHERE "events"."status" = 'leased';--> statement-breakpoint
CREATE INDEX "events_expiring_idx" ON "events" USING btree ("expires_at") WHERE "events"."status" = 'available' and "events"."expires_at" is not null;