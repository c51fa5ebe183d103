CREATE TABLE "x402_settlements_open" (
	"network" text NOT NULL,
	"asset" text NOT NULL,
	"payer" text NOT NULL,
	"nonce" text NOT NULL,
	CONSTRAINT "x402_settlements_open_network_asset_payer_nonce_pk" PRIMARY KEY("network","asset","payer","nonce")
);
--> statement-breakpoint
DROP INDEX "x402_settlements_open_idx";--> statement-breakpoint
-- Room on each page for an update's new row version beside the old one: with no index on a column an update
-- changes, every update after the claim can then be HOT (no index entries, no page split).
ALTER TABLE "x402_settlements" SET (fillfactor = 70);
--> statement-breakpoint
-- The rows open now join the reconciler's open list (from here on the claim's statement adds them).
INSERT INTO "x402_settlements_open" ("network", "asset", "payer", "nonce")
SELECT "network", "asset", "payer", "nonce" FROM "x402_settlements" WHERE "status" IN ('claimed', 'broadcast');
