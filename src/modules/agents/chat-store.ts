import { and, asc, eq, sql } from 'drizzle-orm';
import type { Executor } from '../../platform/db.js';
import { agentChatEntries, agentTokenUsage } from './tables.js';

/** A transcript entry in the runtime's neutral form (src/agent-runtime/models.ts `Entry`). */
export type TranscriptEntry = Record<string, unknown> & { role: string; content: string };

export interface SessionSummary {
  session: string;
  messages: number;
  updatedAt: Date;
}

/** The agents module's chat histories and token use (tables.ts): every statement on them. */
export class ChatStore {
  constructor(private readonly db: Executor) {}

  async entries(agentId: string, session: string): Promise<TranscriptEntry[]> {
    const rows = await this.db
      .select({ entry: agentChatEntries.entry })
      .from(agentChatEntries)
      .where(and(eq(agentChatEntries.agentId, agentId), eq(agentChatEntries.session, session)))
      .orderBy(asc(agentChatEntries.seq));
    return rows.map((row) => row.entry as TranscriptEntry);
  }

  /**
   * A turn, in one transaction: its entries after the session's last, whole (the session's lock serializes
   * concurrent turns' appends, so each turn's entries stay together, in the order the turns finish), and its
   * tokens on the agent's UTC day.
   */
  async recordTurn(agentId: string, session: string, entries: TranscriptEntry[], tokens: number, now: Date): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`tollgate:agent-chat:${agentId}:${session}`}, 0))`);
      await tx.execute(sql`
        insert into agent_chat_entries (agent_id, session, seq, entry, created_at)
        select ${agentId}, ${session}, coalesce((select max(seq) from agent_chat_entries where agent_id = ${agentId} and session = ${session}), 0) + e.ord, e.entry, ${now}
        from jsonb_array_elements(${JSON.stringify(entries)}::jsonb) with ordinality as e(entry, ord)`);
      if (tokens > 0) {
        await tx
          .insert(agentTokenUsage)
          .values({ agentId, day: now.toISOString().slice(0, 10), tokens })
          .onConflictDoUpdate({ target: [agentTokenUsage.agentId, agentTokenUsage.day], set: { tokens: sql`${agentTokenUsage.tokens} + excluded.tokens` } });
      }
    });
  }

  /** The agent's sessions, the most recently used first, with how many user and assistant messages each holds. */
  async sessions(agentId: string): Promise<SessionSummary[]> {
    const rows = await this.db
      .select({
        session: agentChatEntries.session,
        messages: sql<number>`count(*) filter (where ${agentChatEntries.entry}->>'role' <> 'tool')`.mapWith(Number),
        updatedAt: sql<Date>`max(${agentChatEntries.createdAt})`.mapWith((value: string | Date) => new Date(value)),
      })
      .from(agentChatEntries)
      .where(eq(agentChatEntries.agentId, agentId))
      .groupBy(agentChatEntries.session)
      .orderBy(sql`max(${agentChatEntries.createdAt}) desc`, asc(agentChatEntries.session));
    return rows;
  }

  /** Deletes a session (or, without one, every session of the agent); true when there was anything. */
  async deleteSessions(agentId: string, session?: string): Promise<boolean> {
    const deleted = await this.db
      .delete(agentChatEntries)
      .where(and(eq(agentChatEntries.agentId, agentId), session === undefined ? undefined : eq(agentChatEntries.session, session)))
      .returning({ seq: agentChatEntries.seq });
    return deleted.length > 0;
  }

  /** Tokens used on `day` and in all. */
  async tokens(agentId: string, day: string): Promise<{ today: number; total: number }> {
    const [row] = await this.db
      .select({
        today: sql<number>`coalesce(sum(${agentTokenUsage.tokens}) filter (where ${agentTokenUsage.day} = ${day}), 0)`.mapWith(Number),
        total: sql<number>`coalesce(sum(${agentTokenUsage.tokens}), 0)`.mapWith(Number),
      })
      .from(agentTokenUsage)
      .where(eq(agentTokenUsage.agentId, agentId));
    return row ?? { today: 0, total: 0 };
  }
}
