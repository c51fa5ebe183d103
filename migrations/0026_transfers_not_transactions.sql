ALTER TABLE "credit_top_ups" DROP CONSTRAINT "credit_top_ups_transaction_unique";--> statement-breakpoint
ALTER TABLE "payment_intents" DROP CONSTRAINT "payment_intents_transaction_hash_unique";--> statement-breakpoint
ALTER TABLE "upload_orders" DROP CONSTRAINT "upload_orders_transaction_hash_unique";