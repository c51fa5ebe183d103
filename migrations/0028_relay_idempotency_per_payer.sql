ALTER TABLE "relay_broadcasts" DROP CONSTRAINT "relay_broadcasts_key_unique";--> statement-breakpoint
CREATE INDEX "relay_broadcasts_payer_expiry_idx" ON "relay_broadcasts" USING btree ("payer","expires_at");--> statement-breakpoint
ALTER TABLE "relay_broadcasts" ADD CONSTRAINT "relay_broadcasts_payer_key_unique" UNIQUE("payer","idempotency_key");