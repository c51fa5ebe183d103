-- Events no longer carry a foreign key to their queue: its check was a query per inserted row. Each insert statement
-- reads its queue row FOR KEY SHARE instead, and a queue's delete removes its events itself.
ALTER TABLE "events" DROP CONSTRAINT "events_queue_id_event_queues_id_fk";
--> statement-breakpoint
-- Open events (most writes) no longer add an entry to the finished index.
DROP INDEX "events_queue_finished_idx";--> statement-breakpoint
CREATE INDEX "events_queue_finished_idx" ON "events" USING btree ("queue_id","finished_at") WHERE "events"."finished_at" is not null;--> statement-breakpoint
-- The rule the code kept (finished_at set exactly while an event is terminal), now kept by the database: with it the
-- claim index and the finished index hold every event of a queue between them. Rows that broke it are mended first.
UPDATE "events" SET "finished_at" = "updated_at" WHERE "status" NOT IN ('available', 'leased') AND "finished_at" IS NULL;--> statement-breakpoint
UPDATE "events" SET "finished_at" = NULL WHERE "status" IN ('available', 'leased') AND "finished_at" IS NOT NULL;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_finished_when_terminal" CHECK (("events"."status" in ('available', 'leased')) = ("events"."finished_at" is null));
