import { and, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../db.js';
import type { Clock } from '../clock.js';
import { newId } from '../ids.js';
import type { SecretHasher } from '../secrets.js';
import { mgmtCredentials } from '../tables.js';
import { createUsageToucher } from './touch.js';
import type { PrincipalOf } from './principal.js';

export interface CreatedMgmtCredential {
  id: string;
  name: string;
  prefix: string;
  secret: string;
  createdAt: string;
}

/** Wallet management credentials: issued and revoked by the operator, out of band (CLI). */
export class MgmtCredentials {
  private readonly touch = createUsageToucher(async (id, now) => {
    await this.db
      .update(mgmtCredentials)
      .set({ lastUsedAt: now })
      .where(and(eq(mgmtCredentials.id, id), or(isNull(mgmtCredentials.lastUsedAt), lt(mgmtCredentials.lastUsedAt, sql`${now}::timestamptz - interval '60 seconds'`))));
  });

  constructor(
    private readonly db: Db,
    private readonly hasher: SecretHasher,
    private readonly clock: Clock,
  ) {}

  async create(name: string): Promise<CreatedMgmtCredential> {
    if (name.length < 1 || name.length > 100) throw new Error('name must be 1-100 characters');
    const issued = this.hasher.issue('api');
    const row = { id: newId(), name, prefix: issued.prefix, secretHash: issued.hash, status: 'active', createdAt: this.clock.now() };
    await this.db.insert(mgmtCredentials).values(row);
    return { id: row.id, name, prefix: row.prefix, secret: issued.secret, createdAt: row.createdAt.toISOString() };
  }

  async revoke(id: string): Promise<boolean> {
    const rows = await this.db
      .update(mgmtCredentials)
      .set({ status: 'revoked', revokedAt: this.clock.now() })
      .where(and(eq(mgmtCredentials.id, id), eq(mgmtCredentials.status, 'active')))
      .returning({ id: mgmtCredentials.id });
    return rows.length > 0;
  }

  resolve = async (secretHash: string): Promise<PrincipalOf<'mgmt'> | null> => {
    const [row] = await this.db
      .select({ id: mgmtCredentials.id })
      .from(mgmtCredentials)
      .where(and(eq(mgmtCredentials.secretHash, secretHash), eq(mgmtCredentials.status, 'active')))
      .limit(1);
    if (!row) return null;
    this.touch(row.id, this.clock.now());
    return { kind: 'mgmt', credentialId: row.id };
  };
}
