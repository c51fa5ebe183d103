CREATE TABLE "payment_intent_authorizations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"intent_id" uuid NOT NULL,
	"payer" text NOT NULL,
	"nonce" text NOT NULL,
	"valid_before" bigint NOT NULL,
	"outcome" text NOT NULL,
	"transaction_hash" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "payment_intent_authorizations_payer_nonce_unique" UNIQUE("payer","nonce")
);
--> statement-breakpoint
CREATE TABLE "payment_intents" (
	"id" uuid PRIMARY KEY NOT NULL,
	"project_id" uuid NOT NULL,
	"merchant_id" uuid NOT NULL,
	"external_id" text NOT NULL,
	"customer_ref" text,
	"description" text,
	"metadata" jsonb,
	"status" text NOT NULL,
	"amount_usd_cents" integer NOT NULL,
	"amount" numeric(78, 0) NOT NULL,
	"currency" text DEFAULT 'USD' NOT NULL,
	"network" text NOT NULL,
	"asset" text NOT NULL,
	"pay_to" text NOT NULL,
	"transaction_hash" text,
	"payer" text,
	"authorization_id" uuid,
	"settling_since" timestamp with time zone,
	"failure_code" text,
	"failure_message" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"settled_at" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "payment_intents_transaction_hash_unique" UNIQUE("transaction_hash"),
	CONSTRAINT "payment_intents_merchant_external_unique" UNIQUE("merchant_id","external_id"),
	CONSTRAINT "payment_intents_status_check" CHECK ("payment_intents"."status" in ('pending', 'settling', 'settled', 'failed', 'expired')),
	CONSTRAINT "payment_intents_amount_check" CHECK ("payment_intents"."amount_usd_cents" between 100 and 100000000),
	CONSTRAINT "payment_intents_settled_check" CHECK (("payment_intents"."status" = 'settled') = ("payment_intents"."transaction_hash" is not null))
);
--> statement-breakpoint
ALTER TABLE "payment_intent_authorizations" ADD CONSTRAINT "payment_intent_authorizations_intent_id_payment_intents_id_fk" FOREIGN KEY ("intent_id") REFERENCES "public"."payment_intents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD CONSTRAINT "payment_intents_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD CONSTRAINT "payment_intents_merchant_id_merchants_id_fk" FOREIGN KEY ("merchant_id") REFERENCES "public"."merchants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "payment_intent_authorizations_intent_idx" ON "payment_intent_authorizations" USING btree ("intent_id");--> statement-breakpoint
CREATE INDEX "payment_intents_project_idx" ON "payment_intents" USING btree ("project_id");--> statement-breakpoint
CREATE INDEX "payment_intents_settling_idx" ON "payment_intents" USING btree ("settling_since") WHERE "payment_intents"."status" = 'settling';--> statement-breakpoint
CREATE INDEX "payment_intents_pending_expiry_idx" ON "payment_intents" USING btree ("expires_at") WHERE "payment_intents"."status" = 'pending';