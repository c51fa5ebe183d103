DROP INDEX "payment_intents_project_idx";--> statement-breakpoint
CREATE INDEX "payment_intents_project_idx" ON "payment_intents" USING btree ("project_id","id");