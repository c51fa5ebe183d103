ALTER TABLE "x402_settlements" ADD COLUMN "kind" text DEFAULT 'eip3009' NOT NULL;--> statement-breakpoint
ALTER TABLE "x402_settlements" ADD COLUMN "token" text;
