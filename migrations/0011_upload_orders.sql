CREATE TABLE "upload_orders" (
	"id" uuid PRIMARY KEY NOT NULL,
	"key_hash" text NOT NULL,
	"status" text NOT NULL,
	"file_sha256" text NOT NULL,
	"file_bytes" integer NOT NULL,
	"media_type" text NOT NULL,
	"amount" numeric(78, 0) NOT NULL,
	"network" text NOT NULL,
	"asset" text NOT NULL,
	"pay_to" text NOT NULL,
	"retention_days" integer NOT NULL,
	"quote_expires_at" timestamp with time zone NOT NULL,
	"payer" text,
	"authorization_nonce" text,
	"authorization_valid_before" numeric(78, 0),
	"transaction_hash" text,
	"pending_since" timestamp with time zone,
	"cid" text,
	"fulfilled_at" timestamp with time zone,
	"expires_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "upload_orders_key_hash_unique" UNIQUE("key_hash"),
	CONSTRAINT "upload_orders_authorization_unique" UNIQUE("payer","authorization_nonce"),
	CONSTRAINT "upload_orders_transaction_hash_unique" UNIQUE("transaction_hash"),
	CONSTRAINT "upload_orders_status_check" CHECK ("upload_orders"."status" in ('awaiting_payment', 'payment_pending', 'paid', 'fulfilled', 'expired')),
	CONSTRAINT "upload_orders_paid_check" CHECK (("upload_orders"."status" in ('paid', 'fulfilled', 'expired')) = ("upload_orders"."transaction_hash" is not null)),
	CONSTRAINT "upload_orders_fulfilled_check" CHECK (("upload_orders"."status" = 'fulfilled') <= ("upload_orders"."cid" is not null and "upload_orders"."expires_at" is not null))
);
--> statement-breakpoint
CREATE INDEX "upload_orders_cid_idx" ON "upload_orders" USING btree ("cid") WHERE "upload_orders"."status" = 'fulfilled';--> statement-breakpoint
CREATE INDEX "upload_orders_pending_idx" ON "upload_orders" USING btree ("pending_since") WHERE "upload_orders"."status" = 'payment_pending';--> statement-breakpoint
CREATE INDEX "upload_orders_expiry_idx" ON "upload_orders" USING btree ("expires_at") WHERE "upload_orders"."status" = 'fulfilled';