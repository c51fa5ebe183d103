CREATE TABLE "wallet_approvals" (
	"id" uuid PRIMARY KEY NOT NULL,
	"wallet_id" uuid NOT NULL,
	"status" text NOT NULL,
	"network" text NOT NULL,
	"asset" text NOT NULL,
	"amount" numeric(78, 0) NOT NULL,
	"pay_to" text NOT NULL,
	"method" text NOT NULL,
	"url" text NOT NULL,
	"requested_by" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"decided_by" uuid,
	"decided_at" timestamp with time zone,
	"payment_id" uuid,
	"consumed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "wallet_policies" (
	"wallet_id" uuid PRIMARY KEY NOT NULL,
	"policy" jsonb NOT NULL,
	"updated_by" uuid NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "wallet_approvals" ADD CONSTRAINT "wallet_approvals_wallet_id_wallets_id_fk" FOREIGN KEY ("wallet_id") REFERENCES "public"."wallets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "wallet_policies" ADD CONSTRAINT "wallet_policies_wallet_id_wallets_id_fk" FOREIGN KEY ("wallet_id") REFERENCES "public"."wallets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "wallet_approvals_wallet_idx" ON "wallet_approvals" USING btree ("wallet_id","id");--> statement-breakpoint
CREATE INDEX "wallet_payments_window_idx" ON "wallet_payments" USING btree ("wallet_id","created_at");