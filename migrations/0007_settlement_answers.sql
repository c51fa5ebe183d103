ALTER TABLE "x402_settlements" ADD COLUMN "payment_id" text;--> statement-breakpoint
ALTER TABLE "x402_settlements" ADD COLUMN "success_answered_at" timestamp with time zone;--> statement-breakpoint
CREATE UNIQUE INDEX "x402_settlements_payment_id_idx" ON "x402_settlements" USING btree ("payer","payment_id") WHERE "x402_settlements"."payment_id" is not null;--> statement-breakpoint
-- Settlements finished before this migration were answered by their own settle.
UPDATE "x402_settlements" SET "success_answered_at" = "finished_at" WHERE "status" = 'settled';
