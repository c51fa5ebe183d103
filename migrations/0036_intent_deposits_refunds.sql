CREATE TABLE "payment_intent_deposit_checkpoints" (
	"network" text PRIMARY KEY NOT NULL,
	"block_number" bigint NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "payment_intent_deposit_keys" (
	"project_id" uuid PRIMARY KEY NOT NULL,
	"sealed_seed" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "payment_intent_deposit_transfers" (
	"network" text NOT NULL,
	"transaction_hash" text NOT NULL,
	"log_index" integer NOT NULL,
	"intent_id" uuid NOT NULL,
	"from_address" text NOT NULL,
	"value" numeric(78, 0) NOT NULL,
	"block_number" bigint NOT NULL,
	"block_time" timestamp with time zone NOT NULL,
	"on_time" boolean NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "payment_intent_deposit_transfers_network_transaction_hash_log_index_pk" PRIMARY KEY("network","transaction_hash","log_index")
);
--> statement-breakpoint
CREATE TABLE "payment_intent_deposits" (
	"intent_id" uuid PRIMARY KEY NOT NULL,
	"project_id" uuid NOT NULL,
	"address" text NOT NULL,
	"received" numeric(78, 0) DEFAULT '0' NOT NULL,
	"swept" numeric(78, 0) DEFAULT '0' NOT NULL,
	"sweep_after" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "payment_intent_deposits_address_unique" UNIQUE("address")
);
--> statement-breakpoint
CREATE TABLE "payment_intent_refunds" (
	"id" uuid PRIMARY KEY NOT NULL,
	"intent_id" uuid NOT NULL,
	"project_id" uuid NOT NULL,
	"amount_usd_cents" integer NOT NULL,
	"recipient" text NOT NULL,
	"wallet_id" uuid NOT NULL,
	"wallet_credential_id" uuid NOT NULL,
	"status" text NOT NULL,
	"transaction_hash" text,
	"failure_code" text,
	"failure_message" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "payment_intent_refunds_amount_check" CHECK ("payment_intent_refunds"."amount_usd_cents" > 0),
	CONSTRAINT "payment_intent_refunds_status_check" CHECK ("payment_intent_refunds"."status" in ('pending', 'succeeded', 'failed'))
);
--> statement-breakpoint
CREATE TABLE "payment_intent_sweeps" (
	"id" uuid PRIMARY KEY NOT NULL,
	"intent_id" uuid NOT NULL,
	"from_address" text NOT NULL,
	"pay_to" text NOT NULL,
	"amount" numeric(78, 0) NOT NULL,
	"nonce" text NOT NULL,
	"valid_before" bigint NOT NULL,
	"status" text NOT NULL,
	"transaction_hash" text,
	"error" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "payment_intents" ADD COLUMN "paid_via" text;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD COLUMN "received_amount" numeric(78, 0) DEFAULT '0' NOT NULL;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD COLUMN "refunded_usd_cents" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "refund_wallet_id" uuid;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "refund_wallet_credential_id" uuid;--> statement-breakpoint
ALTER TABLE "payment_intent_deposit_keys" ADD CONSTRAINT "payment_intent_deposit_keys_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_intent_deposit_transfers" ADD CONSTRAINT "payment_intent_deposit_transfers_intent_id_payment_intents_id_fk" FOREIGN KEY ("intent_id") REFERENCES "public"."payment_intents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_intent_deposits" ADD CONSTRAINT "payment_intent_deposits_intent_id_payment_intents_id_fk" FOREIGN KEY ("intent_id") REFERENCES "public"."payment_intents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_intent_refunds" ADD CONSTRAINT "payment_intent_refunds_intent_id_payment_intents_id_fk" FOREIGN KEY ("intent_id") REFERENCES "public"."payment_intents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_intent_sweeps" ADD CONSTRAINT "payment_intent_sweeps_intent_id_payment_intents_id_fk" FOREIGN KEY ("intent_id") REFERENCES "public"."payment_intents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "payment_intent_deposit_transfers_intent_idx" ON "payment_intent_deposit_transfers" USING btree ("intent_id","block_number");--> statement-breakpoint
CREATE INDEX "payment_intent_deposits_unswept_idx" ON "payment_intent_deposits" USING btree ("intent_id") WHERE "payment_intent_deposits"."received" > "payment_intent_deposits"."swept";--> statement-breakpoint
CREATE INDEX "payment_intent_refunds_intent_idx" ON "payment_intent_refunds" USING btree ("intent_id","id");--> statement-breakpoint
CREATE INDEX "payment_intent_refunds_pending_idx" ON "payment_intent_refunds" USING btree ("created_at") WHERE "payment_intent_refunds"."status" = 'pending';--> statement-breakpoint
CREATE UNIQUE INDEX "payment_intent_sweeps_one_sending" ON "payment_intent_sweeps" USING btree ("intent_id") WHERE "payment_intent_sweeps"."status" = 'sending';--> statement-breakpoint
CREATE INDEX "payment_intent_sweeps_intent_idx" ON "payment_intent_sweeps" USING btree ("intent_id","created_at");--> statement-breakpoint
ALTER TABLE "payment_intents" ADD CONSTRAINT "payment_intents_refunded_check" CHECK ("payment_intents"."refunded_usd_cents" >= 0 and "payment_intents"."refunded_usd_cents"::numeric * 10000 <= "payment_intents"."received_amount");--> statement-breakpoint
-- Hand-written: intents settled before this migration were all paid over x402, for exactly their amount.
UPDATE "payment_intents" SET "paid_via" = 'x402', "received_amount" = "amount" WHERE "status" = 'settled';
