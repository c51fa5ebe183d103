ALTER TABLE "payment_intents" ADD COLUMN "return_url" text;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "intent_events_queue_id" uuid;