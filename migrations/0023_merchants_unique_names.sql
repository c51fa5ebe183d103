-- Merchant names become unique within a project. Earlier duplicates are renamed first, so the constraint
-- can be added whatever the data: the oldest merchant of a name keeps it, each later one (by created_at,
-- then id) takes the first free "name (n)", n = 2, 3, ..., shortened so the whole stays within 200 characters.
DO $$
DECLARE
  dup record;
  n integer;
  candidate text;
BEGIN
  FOR dup IN
    SELECT m.id, m.project_id, m.name FROM "merchants" m
    WHERE EXISTS (
      SELECT 1 FROM "merchants" o
      WHERE o.project_id = m.project_id AND o.name = m.name AND (o.created_at, o.id) < (m.created_at, m.id)
    )
    ORDER BY m.created_at, m.id
  LOOP
    n := 2;
    LOOP
      candidate := left(dup.name, 200 - length(' (' || n || ')')) || ' (' || n || ')';
      EXIT WHEN NOT EXISTS (SELECT 1 FROM "merchants" WHERE project_id = dup.project_id AND name = candidate);
      n := n + 1;
    END LOOP;
    UPDATE "merchants" SET name = candidate WHERE id = dup.id;
  END LOOP;
END $$;
--> statement-breakpoint
ALTER TABLE "merchants" ADD CONSTRAINT "merchants_project_name_unique" UNIQUE("project_id","name");
