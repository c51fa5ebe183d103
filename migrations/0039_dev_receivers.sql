CREATE TABLE "dev_receivers" (
	"name" text PRIMARY KEY NOT NULL,
	"address" text NOT NULL,
	"sealed_key" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
