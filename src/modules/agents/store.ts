import { desc, eq } from 'drizzle-orm';
import type { Executor } from '../../platform/db.js';
import { agents } from './tables.js';

export type AgentRow = typeof agents.$inferSelect;

/** Every statement on the agents table. */
export class AgentsStore {
  constructor(private readonly db: Executor) {}

  async insert(executor: Executor, row: AgentRow): Promise<AgentRow> {
    const [created] = await executor.insert(agents).values(row).returning();
    return created!;
  }

  listByUser(userId: string): Promise<AgentRow[]> {
    return this.db.select().from(agents).where(eq(agents.userId, userId)).orderBy(desc(agents.createdAt), desc(agents.id));
  }
}
