CREATE TABLE "chain_payment_uses" (
	"network" text NOT NULL,
	"transaction_hash" text NOT NULL,
	"log_index" integer NOT NULL,
	"asset" text NOT NULL,
	"payer" text NOT NULL,
	"nonce" text NOT NULL,
	"pay_to" text NOT NULL,
	"amount" numeric(78, 0) NOT NULL,
	"claimant" text NOT NULL,
	"claimed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "chain_payment_uses_network_transaction_hash_log_index_pk" PRIMARY KEY("network","transaction_hash","log_index")
);
--> statement-breakpoint
ALTER TABLE "x402_settlements" ADD COLUMN "request" jsonb;--> statement-breakpoint
ALTER TABLE "x402_settlements" ADD COLUMN "transfer_log_index" integer;