import { and, desc, eq, gt, isNull, lt, or, sql, type SQL } from 'drizzle-orm';
import { databaseNow, type Clock } from '../../platform/clock.js';
import type { Db, Executor } from '../../platform/db.js';
import { oauthClients, oauthCodes, oauthGrants, oauthTokens } from './tables.js';

export type ClientRow = typeof oauthClients.$inferSelect;
export type GrantRow = typeof oauthGrants.$inferSelect;
export type CodeRow = typeof oauthCodes.$inferSelect;
export type TokenKind = 'access' | 'refresh';
export type RevokedReason = 'user' | 'code_reused' | 'refresh_token_reused';

/** A token to record: its keyed hash and how long it lives from the database's now. */
export interface NewToken {
  id: string;
  kind: TokenKind;
  tokenHash: string;
  seconds: number;
}

/**
 * SQL of the authorization server's tables. Expiries are decided by the database's now() (every node agrees); each
 * state change (a code used, a refresh token rotated, a grant revoked) is one conditional UPDATE whose WHERE names
 * the state it moves from, so of two concurrent uses exactly one matches a row: the other is the reuse.
 */
export class OAuthStore {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  private get now(): SQL {
    return databaseNow(this.clock);
  }

  async insertClient(row: typeof oauthClients.$inferInsert): Promise<ClientRow> {
    const [inserted] = await this.db.insert(oauthClients).values(row).returning();
    return inserted!;
  }

  async client(id: string): Promise<ClientRow | undefined> {
    const [row] = await this.db.select().from(oauthClients).where(eq(oauthClients.id, id));
    return row;
  }

  /** The grant and its first code, together: a code never exists without its grant, nor a grant without a way to use it. */
  async insertGrantWithCode(grant: Omit<GrantRow, 'createdAt' | 'lastUsedAt' | 'revokedAt' | 'revokedReason' | 'status'>, code: Pick<CodeRow, 'codeHash' | 'redirectUri' | 'codeChallenge'>, codeSeconds: number): Promise<void> {
    const now = this.now;
    await this.db.transaction(async (tx) => {
      await tx.insert(oauthGrants).values({ ...grant, status: 'active', createdAt: now });
      await tx.insert(oauthCodes).values({ ...code, grantId: grant.id, createdAt: now, expiresAt: sql`${now} + make_interval(secs => ${codeSeconds})` });
    });
  }

  async grant(id: string): Promise<GrantRow | undefined> {
    const [row] = await this.db.select().from(oauthGrants).where(eq(oauthGrants.id, id));
    return row;
  }

  /** A user's grants with their clients, newest first. */
  async grantsOf(userId: string, limit: number): Promise<Array<{ grant: GrantRow; client: ClientRow }>> {
    return this.db
      .select({ grant: oauthGrants, client: oauthClients })
      .from(oauthGrants)
      .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
      .where(eq(oauthGrants.userId, userId))
      .orderBy(desc(oauthGrants.createdAt), desc(oauthGrants.id))
      .limit(limit);
  }

  /** active → revoked, once; `userId` narrows it to that user's grant. Undefined when it was no such active grant. */
  async revokeGrant(id: string, reason: RevokedReason, userId?: string): Promise<GrantRow | undefined> {
    const [row] = await this.db
      .update(oauthGrants)
      .set({ status: 'revoked', revokedReason: reason, revokedAt: this.now })
      .where(and(eq(oauthGrants.id, id), eq(oauthGrants.status, 'active'), userId === undefined ? undefined : eq(oauthGrants.userId, userId)))
      .returning();
    return row;
  }

  async touchGrant(id: string, now: Date): Promise<void> {
    await this.db
      .update(oauthGrants)
      .set({ lastUsedAt: now })
      .where(and(eq(oauthGrants.id, id), or(isNull(oauthGrants.lastUsedAt), lt(oauthGrants.lastUsedAt, sql`${now}::timestamptz - interval '60 seconds'`))));
  }

  /** A code with its grant, whatever their state, and whether the code has expired by the database's clock. */
  async codeWithGrant(codeHash: string): Promise<{ code: CodeRow; grant: GrantRow; expired: boolean } | undefined> {
    const [row] = await this.db
      .select({ code: oauthCodes, grant: oauthGrants, expired: sql<boolean>`${oauthCodes.expiresAt} <= ${this.now}` })
      .from(oauthCodes)
      .innerJoin(oauthGrants, eq(oauthGrants.id, oauthCodes.grantId))
      .where(eq(oauthCodes.codeHash, codeHash));
    return row;
  }

  /** unused → used, while it lives; false when another exchange used it first (or it expired meanwhile). */
  async useCode(tx: Executor, codeHash: string): Promise<boolean> {
    const rows = await tx
      .update(oauthCodes)
      .set({ usedAt: this.now })
      .where(and(eq(oauthCodes.codeHash, codeHash), isNull(oauthCodes.usedAt), gt(oauthCodes.expiresAt, this.now)))
      .returning({ codeHash: oauthCodes.codeHash });
    return rows.length > 0;
  }

  /** A refresh token with its grant, whatever their state, and whether it has expired by the database's clock. */
  async refreshWithGrant(tokenHash: string): Promise<{ token: typeof oauthTokens.$inferSelect; grant: GrantRow; expired: boolean } | undefined> {
    const [row] = await this.db
      .select({ token: oauthTokens, grant: oauthGrants, expired: sql<boolean>`${oauthTokens.expiresAt} <= ${this.now}` })
      .from(oauthTokens)
      .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
      .where(and(eq(oauthTokens.tokenHash, tokenHash), eq(oauthTokens.kind, 'refresh')));
    return row;
  }

  /** unused → used (rotated), while it lives; false when another request rotated it first. */
  async useRefresh(tx: Executor, id: string): Promise<boolean> {
    const rows = await tx
      .update(oauthTokens)
      .set({ usedAt: this.now })
      .where(and(eq(oauthTokens.id, id), eq(oauthTokens.kind, 'refresh'), isNull(oauthTokens.usedAt), gt(oauthTokens.expiresAt, this.now)))
      .returning({ id: oauthTokens.id });
    return rows.length > 0;
  }

  async insertTokens(tx: Executor, grantId: string, tokens: NewToken[]): Promise<void> {
    const now = this.now;
    await tx.insert(oauthTokens).values(tokens.map((t) => ({ id: t.id, grantId, kind: t.kind, tokenHash: t.tokenHash, createdAt: now, expiresAt: sql`${now} + make_interval(secs => ${t.seconds})` })));
  }

  /** The active grant behind a live access token (unexpired by the database's clock); undefined otherwise. */
  async grantOfAccessToken(tokenHash: string): Promise<GrantRow | undefined> {
    const [row] = await this.db
      .select({ grant: oauthGrants })
      .from(oauthTokens)
      .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
      .where(and(eq(oauthTokens.tokenHash, tokenHash), eq(oauthTokens.kind, 'access'), gt(oauthTokens.expiresAt, this.now), eq(oauthGrants.status, 'active')))
      .limit(1);
    return row?.grant;
  }

  /** Deletes codes and tokens expired more than `afterSeconds` ago; how many of each went. */
  async sweep(afterSeconds: number): Promise<{ codes: number; tokens: number }> {
    const before = sql`${this.now} - make_interval(secs => ${afterSeconds})`;
    const codes = await this.db.delete(oauthCodes).where(lt(oauthCodes.expiresAt, before)).returning({ codeHash: oauthCodes.codeHash });
    const tokens = await this.db.delete(oauthTokens).where(lt(oauthTokens.expiresAt, before)).returning({ id: oauthTokens.id });
    return { codes: codes.length, tokens: tokens.length };
  }
}
