CREATE TABLE "agent_chat_prices" (
	"agent_id" uuid PRIMARY KEY NOT NULL,
	"price_per_1k_tokens" numeric(78, 0) NOT NULL,
	"max_tokens_per_turn" integer NOT NULL,
	"pay_to" text NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "agent_chat_prices_price_check" CHECK ("agent_chat_prices"."price_per_1k_tokens" > 0 and "agent_chat_prices"."max_tokens_per_turn" > 0)
);
--> statement-breakpoint
CREATE TABLE "agent_paid_turns" (
	"network" text NOT NULL,
	"asset" text NOT NULL,
	"payer" text NOT NULL,
	"nonce" text NOT NULL,
	"agent_id" uuid NOT NULL,
	"turn_id" uuid NOT NULL,
	"price_per_1k_tokens" numeric(78, 0) NOT NULL,
	"max_tokens" integer NOT NULL,
	"maximum" numeric(78, 0) NOT NULL,
	"pay_to" text NOT NULL,
	"status" text NOT NULL,
	"tokens" integer,
	"amount" numeric(78, 0),
	"answer" jsonb,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "agent_paid_turns_network_asset_payer_nonce_pk" PRIMARY KEY("network","asset","payer","nonce"),
	CONSTRAINT "agent_paid_turns_status_check" CHECK ("agent_paid_turns"."status" in ('running', 'completed', 'failed')),
	CONSTRAINT "agent_paid_turns_amount_check" CHECK ("agent_paid_turns"."amount" is null or ("agent_paid_turns"."amount" >= 0 and "agent_paid_turns"."amount" <= "agent_paid_turns"."maximum"))
);
--> statement-breakpoint
CREATE INDEX "agent_paid_turns_agent_idx" ON "agent_paid_turns" USING btree ("agent_id","created_at");--> statement-breakpoint
CREATE INDEX "agent_paid_turns_turn_idx" ON "agent_paid_turns" USING btree ("turn_id");