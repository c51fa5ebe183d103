CREATE TABLE "wallet_credentials" (
	"id" uuid PRIMARY KEY NOT NULL,
	"wallet_id" uuid NOT NULL,
	"name" text NOT NULL,
	"prefix" text NOT NULL,
	"secret_hash" text NOT NULL,
	"status" text NOT NULL,
	"last_used_at" timestamp with time zone,
	"expires_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone,
	CONSTRAINT "wallet_credentials_secret_hash_unique" UNIQUE("secret_hash")
);
--> statement-breakpoint
CREATE TABLE "wallet_payments" (
	"id" uuid PRIMARY KEY NOT NULL,
	"wallet_id" uuid NOT NULL,
	"credential_id" uuid NOT NULL,
	"status" text NOT NULL,
	"x402_version" integer NOT NULL,
	"scheme" text NOT NULL,
	"network" text NOT NULL,
	"asset" text NOT NULL,
	"amount" numeric(78, 0) NOT NULL,
	"pay_to" text NOT NULL,
	"nonce" text NOT NULL,
	"method" text NOT NULL,
	"resource" text NOT NULL,
	"upstream_status" integer,
	"transaction" text,
	"settlement" jsonb,
	"error" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "wallet_payments_wallet_nonce_unique" UNIQUE("wallet_id","nonce")
);
--> statement-breakpoint
CREATE TABLE "wallets" (
	"id" uuid PRIMARY KEY NOT NULL,
	"owner_credential_id" uuid NOT NULL,
	"external_id" text NOT NULL,
	"name" text NOT NULL,
	"provider" text NOT NULL,
	"chain_type" text NOT NULL,
	"status" text NOT NULL,
	"address" text,
	"key_ref" text,
	"metadata" jsonb,
	"last_error" text,
	"provision_attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "wallets_owner_external_unique" UNIQUE("owner_credential_id","external_id")
);
--> statement-breakpoint
ALTER TABLE "wallet_credentials" ADD CONSTRAINT "wallet_credentials_wallet_id_wallets_id_fk" FOREIGN KEY ("wallet_id") REFERENCES "public"."wallets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "wallet_payments" ADD CONSTRAINT "wallet_payments_wallet_id_wallets_id_fk" FOREIGN KEY ("wallet_id") REFERENCES "public"."wallets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "wallet_payments" ADD CONSTRAINT "wallet_payments_credential_id_wallet_credentials_id_fk" FOREIGN KEY ("credential_id") REFERENCES "public"."wallet_credentials"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "wallet_credentials_wallet_idx" ON "wallet_credentials" USING btree ("wallet_id","created_at");--> statement-breakpoint
CREATE INDEX "wallet_payments_wallet_idx" ON "wallet_payments" USING btree ("wallet_id","id");--> statement-breakpoint
CREATE INDEX "wallets_owner_idx" ON "wallets" USING btree ("owner_credential_id","created_at");--> statement-breakpoint
CREATE INDEX "wallets_provisioning_idx" ON "wallets" USING btree ("next_attempt_at") WHERE "wallets"."status" <> 'active';