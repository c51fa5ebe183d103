CREATE TABLE "agent_instances" (
	"id" uuid PRIMARY KEY NOT NULL,
	"agent_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"app_name" text NOT NULL,
	"url" text NOT NULL,
	"cpus" integer NOT NULL,
	"memory_mb" integer NOT NULL,
	"volume_size_gb" integer NOT NULL,
	"volume_ref" text NOT NULL,
	"machine_ref" text,
	"sealed_token" text NOT NULL,
	"started_at" timestamp with time zone,
	"expires_at" timestamp with time zone,
	"stopped_at" timestamp with time zone,
	"removed_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "agent_instances_agent_unique" UNIQUE("agent_id")
);
--> statement-breakpoint
CREATE TABLE "agent_provider_keys" (
	"agent_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"sealed_key" text NOT NULL,
	"key_hint" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "agent_provider_keys_agent_id_provider_pk" PRIMARY KEY("agent_id","provider"),
	CONSTRAINT "agent_provider_keys_provider_check" CHECK ("agent_provider_keys"."provider" in ('openai', 'anthropic', 'openrouter'))
);
--> statement-breakpoint
CREATE TABLE "agents" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"name" text NOT NULL,
	"type" text NOT NULL,
	"spec" text NOT NULL,
	"status" text NOT NULL,
	"attempts" integer NOT NULL,
	"last_error" text,
	"next_attempt_at" timestamp with time zone,
	"daily_token_budget" integer DEFAULT 200000 NOT NULL,
	"wallet_id" uuid,
	"wallet_credential_id" uuid,
	"payment_budget" numeric(78, 0) DEFAULT '0' NOT NULL,
	"payment_spent" numeric(78, 0) DEFAULT '0' NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "agents_type_check" CHECK ("agents"."type" in ('runtime_a', 'runtime_b')),
	CONSTRAINT "agents_status_check" CHECK ("agents"."status" in ('pending', 'running', 'expired', 'failed')),
	CONSTRAINT "agents_daily_token_budget_check" CHECK ("agents"."daily_token_budget" >= 0),
	CONSTRAINT "agents_payment_budget_check" CHECK ("agents"."payment_spent" >= 0 and "agents"."payment_spent" <= "agents"."payment_budget")
);
--> statement-breakpoint
CREATE TABLE "credit_balances" (
	"user_id" text PRIMARY KEY NOT NULL,
	"balance_cents" bigint NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "credit_balances_non_negative" CHECK ("credit_balances"."balance_cents" >= 0)
);
--> statement-breakpoint
CREATE TABLE "credit_top_ups" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"amount_cents" bigint NOT NULL,
	"status" text NOT NULL,
	"network" text NOT NULL,
	"asset" text NOT NULL,
	"pay_to" text NOT NULL,
	"amount_atomic" numeric(78, 0) NOT NULL,
	"payer" text NOT NULL,
	"nonce" text NOT NULL,
	"valid_before" numeric(78, 0) NOT NULL,
	"transaction_hash" text,
	"failure" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "credit_top_ups_authorization_unique" UNIQUE("network","asset","payer","nonce"),
	CONSTRAINT "credit_top_ups_transaction_unique" UNIQUE("transaction_hash"),
	CONSTRAINT "credit_top_ups_status_check" CHECK ("credit_top_ups"."status" in ('settling', 'settled', 'failed')),
	CONSTRAINT "credit_top_ups_settled_check" CHECK (("credit_top_ups"."status" = 'settled') = ("credit_top_ups"."transaction_hash" is not null)),
	CONSTRAINT "credit_top_ups_amount_positive" CHECK ("credit_top_ups"."amount_cents" > 0)
);
--> statement-breakpoint
CREATE TABLE "credit_transfers" (
	"id" uuid PRIMARY KEY NOT NULL,
	"from_account" text NOT NULL,
	"to_account" text NOT NULL,
	"amount_cents" bigint NOT NULL,
	"cause" text NOT NULL,
	"agent_id" uuid,
	"top_up_id" uuid,
	"refund_of" uuid,
	"note" text,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "credit_transfers_top_up_unique" UNIQUE("top_up_id"),
	CONSTRAINT "credit_transfers_refund_unique" UNIQUE("refund_of"),
	CONSTRAINT "credit_transfers_amount_positive" CHECK ("credit_transfers"."amount_cents" > 0),
	CONSTRAINT "credit_transfers_two_sides" CHECK ("credit_transfers"."from_account" <> "credit_transfers"."to_account"),
	CONSTRAINT "credit_transfers_cause_check" CHECK ("credit_transfers"."cause" in ('grant', 'top_up', 'agent_purchase', 'refund')),
	CONSTRAINT "credit_transfers_traceable" CHECK (case "credit_transfers"."cause" when 'agent_purchase' then "credit_transfers"."agent_id" is not null when 'top_up' then "credit_transfers"."top_up_id" is not null when 'refund' then "credit_transfers"."refund_of" is not null else "credit_transfers"."note" is not null end)
);
--> statement-breakpoint
CREATE INDEX "agent_instances_expiry_idx" ON "agent_instances" USING btree ("expires_at") WHERE "agent_instances"."stopped_at" is null;--> statement-breakpoint
CREATE INDEX "agents_user_idx" ON "agents" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "agents_pending_idx" ON "agents" USING btree ("next_attempt_at") WHERE "agents"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "credit_top_ups_settling_idx" ON "credit_top_ups" USING btree ("updated_at") WHERE "credit_top_ups"."status" = 'settling';--> statement-breakpoint
CREATE INDEX "credit_top_ups_user_idx" ON "credit_top_ups" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "credit_transfers_agent_purchase_unique" ON "credit_transfers" USING btree ("agent_id") WHERE "credit_transfers"."cause" = 'agent_purchase';--> statement-breakpoint
CREATE INDEX "credit_transfers_to_idx" ON "credit_transfers" USING btree ("to_account","created_at");--> statement-breakpoint
CREATE INDEX "credit_transfers_from_idx" ON "credit_transfers" USING btree ("from_account","created_at");