CREATE TABLE "x402_paid_requests" (
	"network" text NOT NULL,
	"asset" text NOT NULL,
	"payer" text NOT NULL,
	"nonce" text NOT NULL,
	"resource" text NOT NULL,
	"payload_hash" text NOT NULL,
	"client_payment_id" text,
	"record_id" text NOT NULL,
	"status" text NOT NULL,
	"settlement" jsonb,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "x402_paid_requests_network_asset_payer_nonce_pk" PRIMARY KEY("network","asset","payer","nonce")
);
