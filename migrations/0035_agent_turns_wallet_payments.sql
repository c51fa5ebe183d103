CREATE TABLE "agent_turns" (
	"id" uuid PRIMARY KEY NOT NULL,
	"agent_id" uuid NOT NULL,
	"session" text NOT NULL,
	"status" text NOT NULL,
	"error" text,
	"request_id" text,
	"tokens" integer,
	"heartbeat_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone,
	CONSTRAINT "agent_turns_status_check" CHECK ("agent_turns"."status" in ('running', 'completed', 'failed'))
);
--> statement-breakpoint
CREATE TABLE "wallet_approval_queues" (
	"wallet_id" uuid PRIMARY KEY NOT NULL,
	"project_id" uuid NOT NULL,
	"queue_id" uuid NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "agent_chat_entries" ADD COLUMN "turn_id" uuid;--> statement-breakpoint
ALTER TABLE "agent_payment_holds" ADD COLUMN "turn_id" uuid;--> statement-breakpoint
ALTER TABLE "wallet_payments" ADD COLUMN "request_id" text;--> statement-breakpoint
ALTER TABLE "wallet_approval_queues" ADD CONSTRAINT "wallet_approval_queues_wallet_id_wallets_id_fk" FOREIGN KEY ("wallet_id") REFERENCES "public"."wallets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agent_turns_session_idx" ON "agent_turns" USING btree ("agent_id","session","created_at");--> statement-breakpoint
CREATE INDEX "agent_turns_running_idx" ON "agent_turns" USING btree ("heartbeat_at") WHERE "agent_turns"."status" = 'running';--> statement-breakpoint
CREATE INDEX "agent_payment_holds_turn_idx" ON "agent_payment_holds" USING btree ("turn_id");