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
-- changes, every update after the claim can then be HOT (no index entries, no page split). Half the page: a row
-- is updated three times and grows (its outcome JSON) while the settles in flight share pages (70: 69 % HOT,
-- 50: 93 %, bench/RESULTS.md).
ALTER TABLE "x402_settlements" SET (fillfactor = 50);
--> statement-breakpoint
-- The rows open now join the reconciler's open list (from here on the claim's statement adds them).
INSERT INTO "x402_settlements_open" ("network", "asset", "payer", "nonce")
SELECT "network", "asset", "payer", "nonce" FROM "x402_settlements" WHERE "status" IN ('claimed', 'broadcast');
