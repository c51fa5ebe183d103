CREATE TABLE "x402_facilitator_signers" (
	"network" text NOT NULL,
	"address" text NOT NULL,
	"source" text NOT NULL,
	"first_seen_at" timestamp with time zone NOT NULL,
	"last_seen_at" timestamp with time zone NOT NULL,
	CONSTRAINT "x402_facilitator_signers_network_address_pk" PRIMARY KEY("network","address")
);
