CREATE TABLE "agent_chat_entries" (
	"agent_id" uuid NOT NULL,
	"session" text NOT NULL,
	"seq" integer NOT NULL,
	"entry" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "agent_chat_entries_agent_id_session_seq_pk" PRIMARY KEY("agent_id","session","seq")
);
--> statement-breakpoint
CREATE TABLE "agent_payment_holds" (
	"id" uuid PRIMARY KEY NOT NULL,
	"agent_id" uuid NOT NULL,
	"wallet_id" uuid NOT NULL,
	"amount" numeric(78, 0) NOT NULL,
	"status" text NOT NULL,
	"paid" numeric(78, 0),
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "agent_payment_holds_status_check" CHECK ("agent_payment_holds"."status" in ('held', 'spent', 'released'))
);
--> statement-breakpoint
CREATE TABLE "agent_token_usage" (
	"agent_id" uuid NOT NULL,
	"day" date NOT NULL,
	"tokens" bigint NOT NULL,
	CONSTRAINT "agent_token_usage_agent_id_day_pk" PRIMARY KEY("agent_id","day")
);
--> statement-breakpoint
CREATE TABLE "agent_withdrawals" (
	"agent_id" uuid NOT NULL,
	"idempotency_key" text NOT NULL,
	"payment_id" uuid NOT NULL,
	"to" text NOT NULL,
	"amount" numeric(78, 0) NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "agent_withdrawals_agent_id_idempotency_key_pk" PRIMARY KEY("agent_id","idempotency_key")
);
--> statement-breakpoint
ALTER TABLE "agents" DROP CONSTRAINT "agents_status_check";--> statement-breakpoint
ALTER TABLE "credit_transfers" DROP CONSTRAINT "credit_transfers_cause_check";--> statement-breakpoint
ALTER TABLE "credit_transfers" DROP CONSTRAINT "credit_transfers_traceable";--> statement-breakpoint
ALTER TABLE "agent_instances" ADD COLUMN "remove_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "agent_instances" ADD COLUMN "halted_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "models" jsonb;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "bot_settings" jsonb;--> statement-breakpoint
CREATE INDEX "agent_payment_holds_open_idx" ON "agent_payment_holds" USING btree ("id") WHERE "agent_payment_holds"."status" = 'held';--> statement-breakpoint
CREATE INDEX "agent_payment_holds_agent_idx" ON "agent_payment_holds" USING btree ("agent_id","status");--> statement-breakpoint
CREATE INDEX "agent_instances_halt_idx" ON "agent_instances" USING btree ("stopped_at") WHERE "agent_instances"."stopped_at" is not null and "agent_instances"."halted_at" is null;--> statement-breakpoint
CREATE INDEX "agent_instances_removal_idx" ON "agent_instances" USING btree ("remove_at") WHERE "agent_instances"."removed_at" is null;--> statement-breakpoint
ALTER TABLE "agents" ADD CONSTRAINT "agents_status_check" CHECK ("agents"."status" in ('pending', 'running', 'stopped', 'expired', 'failed', 'volume_lost', 'deleted'));--> statement-breakpoint
ALTER TABLE "credit_transfers" ADD CONSTRAINT "credit_transfers_cause_check" CHECK ("credit_transfers"."cause" in ('grant', 'top_up', 'agent_purchase', 'agent_renewal', 'refund'));--> statement-breakpoint
ALTER TABLE "credit_transfers" ADD CONSTRAINT "credit_transfers_traceable" CHECK (case "credit_transfers"."cause" when 'agent_purchase' then "credit_transfers"."agent_id" is not null when 'agent_renewal' then "credit_transfers"."agent_id" is not null when 'top_up' then "credit_transfers"."top_up_id" is not null when 'refund' then "credit_transfers"."refund_of" is not null else "credit_transfers"."note" is not null end);--> statement-breakpoint
UPDATE "agent_instances" SET "remove_at" = "stopped_at" + interval '7 days', "halted_at" = "stopped_at" WHERE "stopped_at" IS NOT NULL;
