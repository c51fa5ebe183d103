CREATE TABLE "x402_settlements" (
	"network" text NOT NULL,
	"asset" text NOT NULL,
	"payer" text NOT NULL,
	"nonce" text NOT NULL,
	"pay_to" text NOT NULL,
	"amount" numeric(78, 0) NOT NULL,
	"valid_before" numeric(78, 0) NOT NULL,
	"signature" text NOT NULL,
	"payload_hash" text NOT NULL,
	"status" text NOT NULL,
	"claim_token" text NOT NULL,
	"claimed_at" timestamp with time zone NOT NULL,
	"from_block" bigint NOT NULL,
	"tx_hash" text,
	"error_reason" text,
	"error_message" text,
	"response" jsonb,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone,
	CONSTRAINT "x402_settlements_network_asset_payer_nonce_pk" PRIMARY KEY("network","asset","payer","nonce")
);
--> statement-breakpoint
CREATE INDEX "x402_settlements_signature_idx" ON "x402_settlements" USING btree ("signature");--> statement-breakpoint
CREATE INDEX "x402_settlements_open_idx" ON "x402_settlements" USING btree ("updated_at") WHERE "x402_settlements"."status" in ('claimed', 'broadcast');