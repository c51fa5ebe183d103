ALTER TABLE "payment_intents" ADD COLUMN "last_payment_error_code" text;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD COLUMN "last_payment_error_message" text;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD COLUMN "last_payment_error_at" timestamp with time zone;