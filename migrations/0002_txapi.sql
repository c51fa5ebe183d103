CREATE TABLE "indexed_payments" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "indexed_payments_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"chain_id" integer NOT NULL,
	"token" text NOT NULL,
	"payment_id" text NOT NULL,
	"payer" text NOT NULL,
	"recipient" text NOT NULL,
	"value" numeric(78, 0) NOT NULL,
	"authorization_nonce" text NOT NULL,
	"transaction_hash" text NOT NULL,
	"log_index" integer NOT NULL,
	"block_number" bigint NOT NULL,
	"block_hash" text NOT NULL,
	"block_timestamp" bigint NOT NULL,
	"facilitator" text NOT NULL,
	"indexed_at" timestamp with time zone NOT NULL,
	"recipient_sequence" bigint,
	"signature" text,
	"signer" text,
	"published_at" timestamp with time zone,
	CONSTRAINT "indexed_payments_log_unique" UNIQUE("chain_id","transaction_hash","log_index"),
	CONSTRAINT "indexed_payments_payment_id_unique" UNIQUE("payment_id"),
	CONSTRAINT "indexed_payments_recipient_sequence_unique" UNIQUE("chain_id","recipient","recipient_sequence")
);
--> statement-breakpoint
CREATE TABLE "indexer_blocks" (
	"chain_id" integer NOT NULL,
	"block_number" bigint NOT NULL,
	"block_hash" text NOT NULL,
	"parent_hash" text NOT NULL,
	CONSTRAINT "indexer_blocks_chain_id_block_number_pk" PRIMARY KEY("chain_id","block_number")
);
--> statement-breakpoint
CREATE TABLE "indexer_checkpoints" (
	"chain_id" integer PRIMARY KEY NOT NULL,
	"block_number" bigint NOT NULL,
	"block_hash" text,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "recipient_sequences" (
	"chain_id" integer NOT NULL,
	"recipient" text NOT NULL,
	"last_sequence" bigint NOT NULL,
	CONSTRAINT "recipient_sequences_chain_id_recipient_pk" PRIMARY KEY("chain_id","recipient")
);
--> statement-breakpoint
CREATE INDEX "indexed_payments_chain_block_idx" ON "indexed_payments" USING btree ("chain_id","block_number","log_index");--> statement-breakpoint
CREATE INDEX "indexed_payments_unpublished_idx" ON "indexed_payments" USING btree ("chain_id","block_number","log_index") WHERE "indexed_payments"."recipient_sequence" is null;--> statement-breakpoint
CREATE INDEX "indexed_payments_authorization_idx" ON "indexed_payments" USING btree ("chain_id","token","payer","authorization_nonce");--> statement-breakpoint
CREATE INDEX "indexed_payments_tx_idx" ON "indexed_payments" USING btree ("transaction_hash");--> statement-breakpoint
CREATE INDEX "indexed_payments_recipient_time_idx" ON "indexed_payments" USING btree ("recipient","block_timestamp","chain_id","block_number","log_index");--> statement-breakpoint
CREATE INDEX "indexed_payments_time_idx" ON "indexed_payments" USING btree ("block_timestamp","chain_id","block_number","log_index");