CREATE TABLE "trading_charges" (
	"id" uuid PRIMARY KEY NOT NULL,
	"account_id" uuid NOT NULL,
	"runtime_id" uuid NOT NULL,
	"boundary" text NOT NULL,
	"subject" text NOT NULL,
	"amount_atomic" text NOT NULL,
	"pay_to" text NOT NULL,
	"network" text NOT NULL,
	"asset" text NOT NULL,
	"payer" text NOT NULL,
	"nonce" text NOT NULL,
	"valid_before" text NOT NULL,
	"status" text NOT NULL,
	"reason" text,
	"transaction_hash" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "trading_charges_subject_unique" UNIQUE("account_id","boundary","subject"),
	CONSTRAINT "trading_charges_authorization_unique" UNIQUE("network","asset","payer","nonce"),
	CONSTRAINT "trading_charges_boundary_check" CHECK ("trading_charges"."boundary" in ('strategy_access', 'activation', 'execution', 'market_data')),
	CONSTRAINT "trading_charges_status_check" CHECK ("trading_charges"."status" in ('settling', 'settled', 'failed'))
);
--> statement-breakpoint
ALTER TABLE "trading_strategies" ADD COLUMN "access_price_usd" text;--> statement-breakpoint
ALTER TABLE "trading_strategies" ADD COLUMN "access_pay_to" text;--> statement-breakpoint
ALTER TABLE "trading_charges" ADD CONSTRAINT "trading_charges_account_id_trading_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."trading_accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "trading_charges" ADD CONSTRAINT "trading_charges_runtime_id_trading_runtimes_id_fk" FOREIGN KEY ("runtime_id") REFERENCES "public"."trading_runtimes"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "trading_charges_account_idx" ON "trading_charges" USING btree ("account_id","id");--> statement-breakpoint
CREATE INDEX "trading_charges_settling_idx" ON "trading_charges" USING btree ("updated_at") WHERE "trading_charges"."status" = 'settling';