import type { Logger } from 'pino';
import type { Clock } from '../../../platform/clock.js';
import type { BackgroundLoop } from '../../../platform/jobs.js';
import type { Catalog } from '../catalog.js';
import type { Meter } from '../metering/metering.js';
import { RuntimeStore, type RuntimeRow } from './runtime-store.js';
import type { RuntimeSchedules } from './schedules.js';

/** What aligning needs to know of a runtime (a full row when it is provisioning). */
export type AlignTarget = Pick<RuntimeRow, 'id' | 'status' | 'scheduleId'> | RuntimeRow;

/** Runtimes aligned per pass; a full batch runs the loop again at once. */
const BATCH = 100;

/**
 * Makes each runtime's schedule match its status, and finishes provisioning. Status moves are
 * written first and the schedule follows, here: right after the move (by the caller) and again by the
 * loop for any runtime whose `scheduleState` still differs, so a crash between the two is repaired.
 *
 *  - provisioning: the schedule is made; once the events scheduler has registered it, the account's
 *    wallet is active and metered activation (if priced) is paid, the runtime becomes active. A schedule
 *    the scheduler refuses, a failed wallet, or a refused activation payment fails the runtime; so does
 *    waiting on the schedule or the wallet past the provisioning timeout (a settling activation charge is
 *    always waited for: the charge reconciler resolves it).
 *  - active: the schedule runs (resumed if it was paused);
 *  - paused, needs_review: the schedule is paused;
 *  - stopped, failed: the schedule is deleted.
 */
export class RuntimeReconciler {
  constructor(
    private readonly store: RuntimeStore,
    private readonly schedules: RuntimeSchedules,
    private readonly catalog: Catalog,
    private readonly meter: Meter,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** A runtime still waiting on its schedule or wallet this long after creation fails (TRADING_PROVISIONING_TIMEOUT_SECONDS). */
    private readonly provisioningTimeoutMs: number,
  ) {}

  /** Where the last pass stopped: passes walk the unaligned runtimes round, so ones that must wait never hide the rest. */
  private cursor: string | null = null;

  /** One batch; true when the walk has not come round yet (run again at once). */
  async pass(): Promise<boolean> {
    const unaligned = await this.store.unaligned(BATCH, this.cursor);
    this.cursor = unaligned.length === BATCH ? unaligned.at(-1)!.id : null;
    for (const runtime of unaligned) {
      try {
        await this.align(runtime);
      } catch (error) {
        this.log.warn({ err: error, runtimeId: runtime.id }, 'aligning a runtime with its schedule failed');
      }
    }
    return unaligned.length === BATCH;
  }

  /**
   * Makes the schedule follow the runtime's status. Two moves racing (a pause and a resume) may reach the
   * schedule in the other order, so after each change the status is read again and, if it moved on, the
   * schedule follows it: the last aligner to read the status sets the schedule last.
   */
  async align(runtime: AlignTarget, rounds = 3): Promise<void> {
    switch (runtime.status) {
      case 'provisioning':
        return this.provision('cronExpression' in runtime ? runtime : (await this.store.get(runtime.id))!);
      case 'active':
        if (runtime.scheduleId) await this.schedules.resume(runtime.scheduleId);
        break;
      case 'paused':
      case 'needs_review':
        if (runtime.scheduleId) await this.schedules.pause(runtime.scheduleId);
        break;
      case 'stopped':
      case 'failed':
        if (runtime.scheduleId) await this.schedules.remove(runtime.scheduleId);
        break;
    }
    const now = await this.store.get(runtime.id);
    if (!now) return;
    if (now.status === runtime.status) return this.store.markAligned(runtime.id, runtime.status);
    // Moved on while we aligned: follow it, or record what the schedule now matches so the loop does.
    if (rounds > 1) return this.align(now, rounds - 1);
    await this.store.setScheduleState(runtime.id, runtime.status);
  }

  private async provision(runtime: RuntimeRow): Promise<void> {
    const schedule = await this.schedules.ensure(runtime);
    if (runtime.scheduleId !== schedule.id) await this.store.setSchedule(runtime.id, schedule.id);
    const fail = async (reason: string) => {
      const failed = await this.store.move(this.store.db, runtime.id, ['provisioning'], 'failed', reason, this.clock.now());
      if (failed) await this.align({ ...failed, scheduleId: schedule.id });
    };
    if (schedule.syncStatus === 'error') return fail(`schedule refused: ${schedule.lastError}`);
    const account = await this.catalog.store.account(this.catalog.store.db, runtime.userId, runtime.accountId);
    const wallet = account ? await this.catalog.walletStatus(account) : 'failed';
    if (wallet === 'failed') return fail("the account's agent wallet failed to provision");
    if (schedule.syncStatus !== 'synced' || wallet !== 'active') {
      // Not yet: the next pass looks again, until the timeout. No charge exists before this point (activation is
      // charged only once both are ready), so failing here never leaves a payment behind.
      const waited = this.clock.now().getTime() - runtime.createdAt.getTime();
      if (waited < this.provisioningTimeoutMs) return;
      const missing = schedule.syncStatus !== 'synced' ? 'its schedule was never registered' : "the account's agent wallet never became active";
      return fail(`provisioning timed out after ${Math.round(waited / 1000)} s: ${missing}`);
    }

    const { strategy } = (await this.catalog.store.version(runtime.strategyVersionId))!;
    const paid = await this.meter.forActivation({ accountId: account!.id, walletId: account!.walletId, runtimeId: runtime.id }, runtime.userId, strategy);
    if (paid.kind === 'refused') return fail(`activation payment refused: ${paid.reason}`);
    if (paid.kind === 'pending') return; // the settle's outcome is not known yet: the next pass looks again

    const active = await this.store.move(this.store.db, runtime.id, ['provisioning'], 'active', null, this.clock.now());
    if (active) await this.store.markAligned(runtime.id, 'active');
  }
}

export const reconcileLoop = (reconciler: RuntimeReconciler): BackgroundLoop => ({ name: 'trading.reconcile', intervalMs: 1000, run: () => reconciler.pass() });
