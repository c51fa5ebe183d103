CREATE TABLE "event_queue_counts" (
	"queue_id" uuid NOT NULL,
	"slot" smallint NOT NULL,
	"acked" bigint DEFAULT 0 NOT NULL,
	"dead" bigint DEFAULT 0 NOT NULL,
	"expired" bigint DEFAULT 0 NOT NULL,
	"superseded" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "event_queue_counts_pkey" PRIMARY KEY("queue_id","slot")
);
--> statement-breakpoint
DROP INDEX "events_queue_status_idx";--> statement-breakpoint
ALTER TABLE "event_queues" ADD COLUMN "retention_seconds" integer DEFAULT 604800 NOT NULL;--> statement-breakpoint
-- Queues from before retention get the longest (90 days), so the upgrade's first purge deletes no dead letter
-- or dedupe key a week old that someone counted on; new queues get the 7-day default.
UPDATE "event_queues" SET "retention_seconds" = 7776000;--> statement-breakpoint
CREATE INDEX "events_queue_finished_idx" ON "events" USING btree ("queue_id","finished_at");--> statement-breakpoint
CREATE INDEX "events_dead_idx" ON "events" USING btree ("queue_id","id") WHERE "events"."status" = 'dead';--> statement-breakpoint
-- Terminal counts of the events already there (stats read these instead of counting history).
INSERT INTO "event_queue_counts" ("queue_id", "slot", "acked", "dead", "expired", "superseded")
SELECT "queue_id", 0,
       count(*) FILTER (WHERE "status" = 'acked'), count(*) FILTER (WHERE "status" = 'dead'),
       count(*) FILTER (WHERE "status" = 'expired'), count(*) FILTER (WHERE "status" = 'superseded')
FROM "events" WHERE "status" IN ('acked', 'dead', 'expired', 'superseded')
GROUP BY "queue_id";
