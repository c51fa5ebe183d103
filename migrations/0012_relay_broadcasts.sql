CREATE TABLE "relay_broadcasts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"idempotency_key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"payer" text NOT NULL,
	"nonce" text NOT NULL,
	"status" text NOT NULL,
	"owner" uuid NOT NULL,
	"http_status" integer,
	"answer" jsonb,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "relay_broadcasts_key_unique" UNIQUE("idempotency_key"),
	CONSTRAINT "relay_broadcasts_authorization_unique" UNIQUE("payer","nonce"),
	CONSTRAINT "relay_broadcasts_status_check" CHECK ("relay_broadcasts"."status" in ('in_flight', 'completed')),
	CONSTRAINT "relay_broadcasts_completed_check" CHECK (("relay_broadcasts"."status" = 'completed') = ("relay_broadcasts"."answer" is not null and "relay_broadcasts"."http_status" is not null))
);
--> statement-breakpoint
CREATE INDEX "relay_broadcasts_expiry_idx" ON "relay_broadcasts" USING btree ("expires_at");