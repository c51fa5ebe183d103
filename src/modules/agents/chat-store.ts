import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Executor } from '../../platform/db.js';
import { rowsOf } from '../../platform/sql-rows.js';
import { agentChatEntries, agentTokenUsage, agentTurns } from './tables.js';

/** A transcript entry in the runtime's neutral form (src/agent-runtime/model-types.ts `Entry`). */
export type TranscriptEntry = Record<string, unknown> & { role: string; content: string };

export type TurnRow = typeof agentTurns.$inferSelect;

export interface SessionSummary {
  session: string;
  messages: number;
  updatedAt: Date;
}

/** The day's model tokens as the runtime counts them (its own UTC day). */
export interface TokenDay {
  day: string;
  usedToday: number;
}

// Entries in the order users read them: turn by turn (each at the position of its first entry, so a turn's
// own entries stay together even when another turn of the session finished in between), then by seq.
const TURN_ORDER = sql`min(e.seq) over (partition by coalesce(e.turn_id::text, e.seq::text)), e.seq`;

/**
 * The agents module's chat histories, turns and token use (tables.ts): every statement on them. A turn's
 * moves each name `running` (one conditional UPDATE), so a completion, a failure and the stale sweep cannot
 * both win; appends to a session take its lock, so concurrent turns never share a seq.
 */
export class ChatStore {
  constructor(private readonly db: Executor) {}

  /** The whole session as users read it: every turn's entries (failed ones included), each with its `turnId`. */
  async entries(agentId: string, session: string): Promise<TranscriptEntry[]> {
    const rows = await rowsOf<{ entry: TranscriptEntry; turn_id: string | null }>(
      this.db,
      sql`select e.entry, e.turn_id from agent_chat_entries e where e.agent_id = ${agentId} and e.session = ${session} order by ${TURN_ORDER}`,
    );
    return rows.map((row) => (row.turn_id ? { ...row.entry, turnId: row.turn_id } : row.entry));
  }

  /**
   * The session as the model is sent it: the entries of completed turns (and of the time before turns were
   * recorded). A failed turn is shown, not continued: its unanswered message would be answered again.
   */
  async context(agentId: string, session: string): Promise<TranscriptEntry[]> {
    const rows = await rowsOf<{ entry: TranscriptEntry }>(
      this.db,
      sql`select e.entry from agent_chat_entries e left join agent_turns t on t.id = e.turn_id
          where e.agent_id = ${agentId} and e.session = ${session} and (e.turn_id is null or t.status = 'completed')
          order by ${TURN_ORDER}`,
    );
    return rows.map((row) => row.entry);
  }

  /** The next seqs of a session, under its lock (held until the caller's transaction ends). */
  async #append(tx: Executor, agentId: string, session: string, turnId: string, entries: TranscriptEntry[], now: Date): Promise<void> {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`tollgate:agent-chat:${agentId}:${session}`}, 0))`);
    await tx.execute(sql`
      insert into agent_chat_entries (agent_id, session, seq, entry, turn_id, created_at)
      select ${agentId}, ${session}, coalesce((select max(seq) from agent_chat_entries where agent_id = ${agentId} and session = ${session}), 0) + e.ord, e.entry, ${turnId}, ${now}
      from jsonb_array_elements(${JSON.stringify(entries)}::jsonb) with ordinality as e(entry, ord)`);
  }

  /** A turn begins: its row (`running`, heartbeat now) and the user's messages, in one transaction, before the model is called. */
  async beginTurn(turn: { id: string; agentId: string; session: string; requestId: string | null }, messages: TranscriptEntry[], now: Date): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.insert(agentTurns).values({ ...turn, status: 'running', error: null, tokens: null, heartbeatAt: sql`now()`, createdAt: now, finishedAt: null });
      await this.#append(tx, turn.agentId, turn.session, turn.id, messages, now);
    });
  }

  /** The node running these turns is alive: their heartbeat moves to the database's now. */
  async heartbeat(turnIds: string[]): Promise<void> {
    if (turnIds.length === 0) return;
    await this.db.update(agentTurns).set({ heartbeatAt: sql`now()` }).where(and(inArray(agentTurns.id, turnIds), eq(agentTurns.status, 'running')));
  }

  /**
   * running → completed with what the turn added and its tokens, and the runtime's day count mirrored (and `also`), in
   * one transaction. False (nothing stored) when the turn had already ended (failed by a shutdown or the sweep).
   */
  async completeTurn(turn: { id: string; agentId: string; session: string }, entries: TranscriptEntry[], tokens: number, day: TokenDay | null, now: Date, also?: (tx: Executor) => Promise<void>): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const moved = await tx
        .update(agentTurns)
        .set({ status: 'completed', tokens, finishedAt: now })
        .where(and(eq(agentTurns.id, turn.id), eq(agentTurns.status, 'running')))
        .returning({ id: agentTurns.id });
      if (moved.length === 0) return false;
      await this.#append(tx, turn.agentId, turn.session, turn.id, entries, now);
      if (day) await this.#mirror(tx, turn.agentId, day);
      // What else the turn's end decides (a paid turn's amount and answer): in the same transaction.
      await also?.(tx);
      return true;
    });
  }

  /** running → failed with why; false when it had already ended. */
  async failTurn(turnId: string, error: string, now: Date): Promise<boolean> {
    const moved = await this.db
      .update(agentTurns)
      .set({ status: 'failed', error: error.slice(0, 500), finishedAt: now })
      .where(and(eq(agentTurns.id, turnId), eq(agentTurns.status, 'running')))
      .returning({ id: agentTurns.id });
    return moved.length === 1;
  }

  /** Running turns whose heartbeat is older than `staleSeconds` (database time): their node died. Returns them, failed. */
  async failStale(now: Date, staleSeconds: number): Promise<Array<Pick<TurnRow, 'id' | 'agentId' | 'session'>>> {
    return this.db
      .update(agentTurns)
      .set({ status: 'failed', error: 'interrupted: the service stopped while the turn ran', finishedAt: now })
      .where(and(eq(agentTurns.status, 'running'), sql`${agentTurns.heartbeatAt} < now() - make_interval(secs => ${staleSeconds})`))
      .returning({ id: agentTurns.id, agentId: agentTurns.agentId, session: agentTurns.session });
  }

  async turn(turnId: string): Promise<TurnRow | null> {
    const [row] = await this.db.select().from(agentTurns).where(eq(agentTurns.id, turnId));
    return row ?? null;
  }

  /** A session's turns, oldest first. */
  turns(agentId: string, session: string): Promise<TurnRow[]> {
    return this.db.select().from(agentTurns).where(and(eq(agentTurns.agentId, agentId), eq(agentTurns.session, session))).orderBy(agentTurns.createdAt, agentTurns.id);
  }

  async turnsByIds(ids: string[]): Promise<TurnRow[]> {
    return ids.length === 0 ? [] : this.db.select().from(agentTurns).where(inArray(agentTurns.id, ids));
  }

  /** The agent's day of tokens as its runtime counts it: the stored count rises to it, never falls (the runtime's is monotonic in a day). */
  async mirrorTokens(agentId: string, day: TokenDay): Promise<void> {
    await this.#mirror(this.db, agentId, day);
  }

  async #mirror(executor: Executor, agentId: string, day: TokenDay): Promise<void> {
    await executor
      .insert(agentTokenUsage)
      .values({ agentId, day: day.day, tokens: day.usedToday })
      .onConflictDoUpdate({ target: [agentTokenUsage.agentId, agentTokenUsage.day], set: { tokens: sql`greatest(${agentTokenUsage.tokens}, excluded.tokens)` } });
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
      .orderBy(sql`max(${agentChatEntries.createdAt}) desc`, agentChatEntries.session);
    return rows;
  }

  /** Deletes a session (or, without one, every session of the agent) with its turns; true when there was anything. */
  async deleteSessions(agentId: string, session?: string): Promise<boolean> {
    const deleted = await this.db
      .delete(agentChatEntries)
      .where(and(eq(agentChatEntries.agentId, agentId), session === undefined ? undefined : eq(agentChatEntries.session, session)))
      .returning({ seq: agentChatEntries.seq });
    // Running turns stay: their node ends them (their entries, if they complete, start the session again).
    await this.db.delete(agentTurns).where(and(eq(agentTurns.agentId, agentId), session === undefined ? undefined : eq(agentTurns.session, session), sql`${agentTurns.status} <> 'running'`));
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
