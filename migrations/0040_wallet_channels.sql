CREATE TABLE "wallet_channels" (
	"id" uuid PRIMARY KEY NOT NULL,
	"wallet_id" uuid NOT NULL,
	"channel_id" text NOT NULL,
	"network" text NOT NULL,
	"asset" text NOT NULL,
	"payee" text NOT NULL,
	"receiver_authorizer" text NOT NULL,
	"withdraw_delay" integer NOT NULL,
	"salt" text NOT NULL,
	"url" text NOT NULL,
	"status" text NOT NULL,
	"balance" numeric(78, 0),
	"charged_cumulative" numeric(78, 0) DEFAULT '0' NOT NULL,
	"signed_max" numeric(78, 0) DEFAULT '0' NOT NULL,
	"context" jsonb,
	"lease_id" uuid,
	"lease_until" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "wallet_channels_wallet_channel_unique" UNIQUE("wallet_id","channel_id")
);
--> statement-breakpoint
ALTER TABLE "wallet_channels" ADD CONSTRAINT "wallet_channels_wallet_id_wallets_id_fk" FOREIGN KEY ("wallet_id") REFERENCES "public"."wallets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "wallet_channels_wallet_idx" ON "wallet_channels" USING btree ("wallet_id","id");