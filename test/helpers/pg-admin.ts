// Statements on the PostgreSQL server itself (create and drop databases): no vitest import, so the global setup can use it.
import pg from 'pg';

export function databaseUrl(serverUrl: string, name: string): string {
  const parsed = new URL(serverUrl);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

export async function adminQuery(serverUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
