ALTER TABLE "trading_charges" ALTER COLUMN "runtime_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "trading_strategies" ADD COLUMN "description" text;