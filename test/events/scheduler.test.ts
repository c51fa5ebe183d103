import { sql } from 'drizzle-orm';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Scheduler } from '../../src/modules/events/scheduler.js';
import type { ScheduleInput } from '../../src/modules/events/schedule-service.js';
import type { ApiError } from '../../src/platform/http/errors.js';
import { openEventsHarness, type EventsHarness } from './harness.js';

const PROJECT = 'project-a';
let h: EventsHarness;

beforeAll(async () => {
  h = await openEventsHarness();
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => {
  h.clock.set('2026-03-05T00:00:00Z');
});

let counter = 0;
async function scheduleOf(overrides: Partial<ScheduleInput> & { expression?: string; timezone?: string } = {}) {
  const queue = await h.queues.create(PROJECT, { name: `q-${++counter}`, defaultLeaseSeconds: 60, maxAttempts: 5 });
  const { expression = '0 9 * * *', timezone = 'America/New_York', ...rest } = overrides;
  const { schedule } = await h.schedules.upsert(PROJECT, {
    queueId: queue.id,
    externalId: `ext-${counter}`,
    name: 'job',
    schedule: { type: 'cron', expression, timezone },
    payload: { job: counter },
    overlapPolicy: 'all',
    ...rest,
  });
  return { queue, schedule };
}

async function eventsOf(scheduleId: string) {
  return h.testDatabase.database.query<{ id: string; status: string; scheduledFor: string }>(
    sql`select id, status, to_char(scheduled_for at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as "scheduledFor"
        from events where schedule_id = ${scheduleId} order by scheduled_for, id`,
  );
}

/** Moves the clock to the schedule's next tick and runs one scheduler pass there. */
async function runToNextTick(scheduleId: string): Promise<string> {
  const schedule = await h.schedules.get(PROJECT, scheduleId);
  h.clock.set(schedule.nextFireAt!);
  await h.scheduler.tick();
  return schedule.nextFireAt!.toISOString();
}

describe('cron in a time zone', () => {
  it('fires 09:00 America/New_York at the right UTC instants across the March DST change', async () => {
    const { schedule } = await scheduleOf({ expression: '0 9 * * *', timezone: 'America/New_York' });
    await h.scheduler.tick();
    const ticks: string[] = [];
    for (let i = 0; i < 6; i++) ticks.push(await runToNextTick(schedule.id));
    const expected = [
      '2026-03-05T14:00:00Z', // EST, UTC-5
      '2026-03-06T14:00:00Z',
      '2026-03-07T14:00:00Z',
      '2026-03-08T13:00:00Z', // EDT from 2026-03-08 02:00 local, UTC-4
      '2026-03-09T13:00:00Z',
      '2026-03-10T13:00:00Z',
    ];
    expect(ticks.map((t) => t.replace('.000', ''))).toEqual(expected);
    expect((await eventsOf(schedule.id)).map((e) => e.scheduledFor)).toEqual(expected);
  });

  it('fires at the right UTC instants across the November change, and not a moment early', async () => {
    h.clock.set('2026-10-30T00:00:00Z');
    const { schedule } = await scheduleOf({ expression: '0 9 * * *', timezone: 'America/New_York' });
    await h.scheduler.tick();
    h.clock.set('2026-10-30T12:59:59Z');
    await h.scheduler.tick();
    expect(await eventsOf(schedule.id)).toHaveLength(0);
    const ticks: string[] = [];
    for (let i = 0; i < 4; i++) ticks.push(await runToNextTick(schedule.id));
    expect(ticks).toEqual(['2026-10-30T13:00:00.000Z', '2026-10-31T13:00:00.000Z', '2026-11-01T14:00:00.000Z', '2026-11-02T14:00:00.000Z']);
  });
});

describe('sync lifecycle', () => {
  it('pending -> synced, a changed definition is the next revision, an identical one changes nothing', async () => {
    const { queue, schedule } = await scheduleOf();
    expect(schedule).toMatchObject({ syncStatus: 'pending', revision: 1, syncedRevision: null, nextFireAt: null });

    await h.scheduler.tick();
    let row = await h.schedules.get(PROJECT, schedule.id);
    expect(row).toMatchObject({ syncStatus: 'synced', revision: 1, syncedRevision: 1, lastError: null });
    expect(row.nextFireAt?.toISOString()).toBe('2026-03-05T14:00:00.000Z');

    const input: ScheduleInput = {
      queueId: queue.id,
      externalId: schedule.externalId,
      name: 'job',
      schedule: { type: 'cron', expression: '0 9 * * *', timezone: 'America/New_York' },
      payload: { job: (schedule.payload as { job: number }).job },
      overlapPolicy: 'all',
    };
    const same = await h.schedules.upsert(PROJECT, input);
    expect(same.outcome).toBe('unchanged');
    expect(same.schedule).toMatchObject({ id: schedule.id, revision: 1, syncStatus: 'synced' });

    const changed = await h.schedules.upsert(PROJECT, { ...input, schedule: { ...input.schedule, expression: '30 10 * * 1-5' } });
    expect(changed.outcome).toBe('updated');
    expect(changed.schedule).toMatchObject({ id: schedule.id, revision: 2, syncedRevision: 1, syncStatus: 'pending', nextFireAt: null });
    // Not active while pending: its old next tick does not fire.
    h.clock.set('2026-03-05T14:00:00Z');
    await h.scheduler.fireDue();
    expect(await eventsOf(schedule.id)).toHaveLength(0);

    await h.scheduler.tick();
    row = await h.schedules.get(PROJECT, schedule.id);
    expect(row).toMatchObject({ syncStatus: 'synced', revision: 2, syncedRevision: 2 });
    expect(row.nextFireAt?.toISOString()).toBe('2026-03-05T15:30:00.000Z');
  });

  it('an expression that never fires ends in error with lastError', async () => {
    const { schedule } = await scheduleOf({ expression: '0 0 30 2 *' });
    await h.scheduler.tick();
    const row = await h.schedules.get(PROJECT, schedule.id);
    expect(row.syncStatus).toBe('error');
    expect(row.lastError).toMatch(/no future tick/);
    expect(row.syncedRevision).toBeNull();
  });

  it('rejects bad expressions and time zones', async () => {
    for (const [expression, timezone, field] of [
      ['61 * * * *', 'UTC', 'expression'],
      ['* * * *', 'UTC', 'expression'],
      ['0 0 9 * * *', 'UTC', 'expression'],
      ['0 9 * * *', 'Mars/Olympus_Mons', 'timezone'],
    ]) {
      const error = (await scheduleOf({ expression, timezone }).catch((e: unknown) => e)) as ApiError;
      expect(error.status).toBe(400);
      expect(JSON.stringify(error.details)).toContain(`/schedule/${field}`);
    }
  });
});

describe('firing', () => {
  it('fires each tick exactly once, however many schedulers race for it', async () => {
    const { schedule } = await scheduleOf({ expression: '*/5 * * * *', timezone: 'UTC' });
    await h.scheduler.tick();
    const others = Array.from({ length: 4 }, () => new Scheduler(h.testDatabase.database.db, h.clock, pino({ level: 'silent' }), () => {}));
    for (let i = 0; i < 3; i++) {
      h.clock.advance(5 * 60_000);
      await Promise.all([h.scheduler.tick(), ...others.map((s) => s.tick()), h.scheduler.tick()]);
    }
    const events = await eventsOf(schedule.id);
    expect(events.map((e) => e.scheduledFor)).toEqual(['2026-03-05T00:05:00Z', '2026-03-05T00:10:00Z', '2026-03-05T00:15:00Z']);
  });

  it('after downtime fires only the latest missed tick, then carries on from now', async () => {
    const { schedule } = await scheduleOf({ expression: '0 * * * *', timezone: 'UTC' });
    await h.scheduler.tick();
    h.clock.set('2026-03-05T05:30:00Z');
    await h.scheduler.tick();
    expect((await eventsOf(schedule.id)).map((e) => e.scheduledFor)).toEqual(['2026-03-05T05:00:00Z']);
    expect((await h.schedules.get(PROJECT, schedule.id)).nextFireAt?.toISOString()).toBe('2026-03-05T06:00:00.000Z');
  });

  it('drops a missed tick older than maxEventAgeSeconds instead of enqueuing it', async () => {
    const { schedule } = await scheduleOf({ expression: '0 * * * *', timezone: 'UTC', maxEventAgeSeconds: 600 });
    await h.scheduler.tick();
    h.clock.set('2026-03-05T05:30:00Z');
    await h.scheduler.tick();
    expect(await eventsOf(schedule.id)).toHaveLength(0);
    expect((await h.schedules.get(PROJECT, schedule.id)).nextFireAt?.toISOString()).toBe('2026-03-05T06:00:00.000Z');
  });
});

describe('backfill after downtime and pause/resume', () => {
  async function downFrom0030To0530(overrides: Partial<ScheduleInput>) {
    const { schedule } = await scheduleOf({ expression: '0 * * * *', timezone: 'UTC', ...overrides });
    await h.scheduler.tick();
    h.clock.set('2026-03-05T05:30:00Z');
    const pass = await h.scheduler.tick();
    return { schedule, pass, events: await eventsOf(schedule.id), after: await h.schedules.get(PROJECT, schedule.id) };
  }

  it('backfill all: every missed tick is enqueued once, oldest first, then it carries on from now', async () => {
    const { schedule, pass, events, after } = await downFrom0030To0530({ backfill: 'all' });
    expect(pass.fired).toBe(5);
    expect(events.map((e) => e.scheduledFor)).toEqual(['01', '02', '03', '04', '05'].map((h) => `2026-03-05T${h}:00:00Z`));
    // Claims hand them out oldest tick first.
    const order = [];
    for (let claimed; (claimed = await h.events.claim(PROJECT, schedule.queueId)); ) order.push(claimed.event.id);
    expect(order).toEqual(events.map((e) => e.id));
    expect(after.nextFireAt?.toISOString()).toBe('2026-03-05T06:00:00.000Z');
    await h.scheduler.tick();
    expect(await eventsOf(schedule.id)).toHaveLength(5);
  });

  it('backfill all goes through the overlap policy: skip keeps only the first missed tick', async () => {
    const { events } = await downFrom0030To0530({ backfill: 'all', overlapPolicy: 'skip' });
    expect(events.map((e) => e.scheduledFor)).toEqual(['2026-03-05T01:00:00Z']);
  });

  it('backfill all stops at the 1000 most recent ticks, and schedulers racing over them fire each once', async () => {
    const { schedule } = await scheduleOf({ expression: '* * * * *', timezone: 'UTC', backfill: 'all' });
    await h.scheduler.tick();
    h.clock.set('2026-03-06T00:00:30Z'); // 1440 ticks missed
    const others = Array.from({ length: 2 }, () => new Scheduler(h.testDatabase.database.db, h.clock, pino({ level: 'silent' }), () => {}));
    for (let pass = 0; pass < 12; pass++) await Promise.all([h.scheduler.tick(), ...others.map((s) => s.tick())]);
    const events = await eventsOf(schedule.id);
    expect(events).toHaveLength(1000);
    expect(new Set(events.map((e) => e.scheduledFor)).size).toBe(1000);
    expect(events[0].scheduledFor).toBe('2026-03-05T07:21:00Z');
    expect(events.at(-1)!.scheduledFor).toBe('2026-03-06T00:00:00Z');
  });

  it('backfill none: missed ticks are dropped; a tick found within a minute still fires', async () => {
    const { events, after } = await downFrom0030To0530({ backfill: 'none' });
    expect(events).toHaveLength(0);
    expect(after.nextFireAt?.toISOString()).toBe('2026-03-05T06:00:00.000Z');
    h.clock.set('2026-03-05T06:00:40Z');
    await h.scheduler.tick();
    expect((await eventsOf(after.id)).map((e) => e.scheduledFor)).toEqual(['2026-03-05T06:00:00Z']);
  });

  it('backfill latest (the default) fires the latest missed tick only', async () => {
    const { events, after } = await downFrom0030To0530({});
    expect(after.backfill).toBe('latest');
    expect(events.map((e) => e.scheduledFor)).toEqual(['2026-03-05T05:00:00Z']);
  });

  it('a paused schedule fires nothing; resumed, it fires from its first tick after the resume', async () => {
    const { schedule } = await scheduleOf({ expression: '0 * * * *', timezone: 'UTC', backfill: 'all' });
    await h.scheduler.tick();
    const paused = await h.schedules.pause(PROJECT, schedule.id);
    expect(paused.pausedAt?.toISOString()).toBe('2026-03-05T00:00:00.000Z');
    h.clock.set('2026-03-05T03:30:00Z');
    expect((await h.scheduler.tick()).fired).toBe(0);
    expect((await h.schedules.pause(PROJECT, schedule.id)).pausedAt?.toISOString()).toBe('2026-03-05T00:00:00.000Z');
    const resumed = await h.schedules.resume(PROJECT, schedule.id);
    expect(resumed).toMatchObject({ pausedAt: null, syncStatus: 'pending' });
    await h.scheduler.tick();
    expect(await eventsOf(schedule.id)).toHaveLength(0);
    expect((await h.schedules.get(PROJECT, schedule.id)).nextFireAt?.toISOString()).toBe('2026-03-05T04:00:00.000Z');
    await runToNextTick(schedule.id);
    expect((await eventsOf(schedule.id)).map((e) => e.scheduledFor)).toEqual(['2026-03-05T04:00:00Z']);
    await expect(h.schedules.pause('project-b', schedule.id)).rejects.toMatchObject({ status: 404 });
    await expect(h.schedules.resume(PROJECT, 'not-an-id')).rejects.toMatchObject({ status: 404 });
  });
});

describe('overlap policies', () => {
  async function twoTicks(overlapPolicy: 'all' | 'skip' | 'latest', leaseFirst = false) {
    const { queue, schedule } = await scheduleOf({ expression: '*/10 * * * *', timezone: 'UTC', overlapPolicy });
    await h.scheduler.tick();
    await runToNextTick(schedule.id);
    const claimed = leaseFirst ? await h.events.claim(PROJECT, queue.id, { leaseSeconds: 3600 }) : null;
    await runToNextTick(schedule.id);
    return { queue, schedule, claimed, events: await eventsOf(schedule.id) };
  }

  it('all: every tick is enqueued', async () => {
    const { events } = await twoTicks('all');
    expect(events.map((e) => e.status)).toEqual(['available', 'available']);
  });

  it('skip: a tick is skipped while an earlier event of the schedule is pending or leased', async () => {
    const { events, schedule, queue } = await twoTicks('skip');
    expect(events.map((e) => [e.scheduledFor, e.status])).toEqual([['2026-03-05T00:10:00Z', 'available']]);
    const leased = (await h.events.claim(PROJECT, queue.id, { leaseSeconds: 3600 }))!;
    await runToNextTick(schedule.id);
    expect(await eventsOf(schedule.id)).toHaveLength(1);
    await h.events.ack(PROJECT, leased.event.id, leased.leaseToken);
    await runToNextTick(schedule.id);
    expect((await eventsOf(schedule.id)).map((e) => e.scheduledFor)).toEqual(['2026-03-05T00:10:00Z', '2026-03-05T00:40:00Z']);
  });

  it('latest: the new tick supersedes undelivered ones, leased ones run on', async () => {
    const waiting = await twoTicks('latest');
    expect(waiting.events.map((e) => e.status)).toEqual(['superseded', 'available']);
    const running = await twoTicks('latest', true);
    expect(running.events.map((e) => e.status)).toEqual(['leased', 'available']);
  });
});

describe('schedule limits on delivery', () => {
  it('maxConcurrency caps the leased events of a schedule, even under concurrent claims', async () => {
    const { queue, schedule } = await scheduleOf({ expression: '* * * * *', timezone: 'UTC', maxConcurrency: 2 });
    await h.scheduler.tick();
    for (let i = 0; i < 5; i++) await runToNextTick(schedule.id);
    // An unscheduled event behind them is still served while the schedule is at its cap.
    h.clock.advance(1);
    const plain = await h.events.publish(PROJECT, queue.id, { payload: { plain: true } });

    const claims = await Promise.all(Array.from({ length: 8 }, () => h.events.claim(PROJECT, queue.id)));
    const got = claims.filter((c) => c !== null);
    expect(got.filter((c) => c!.event.scheduleId === schedule.id)).toHaveLength(2);
    expect(got.some((c) => c!.event.id === plain.event.id)).toBe(true);
    expect(got).toHaveLength(3);

    const first = got.find((c) => c!.event.scheduleId === schedule.id)!;
    await h.events.ack(PROJECT, first.event.id, first.leaseToken);
    const next = await h.events.claim(PROJECT, queue.id);
    expect(next?.event.scheduleId).toBe(schedule.id);
    expect(await h.events.claim(PROJECT, queue.id)).toBeNull();
  });

  it('maxEventAgeSeconds: an undelivered event past its age is never delivered and becomes expired', async () => {
    const { queue, schedule } = await scheduleOf({ expression: '0 * * * *', timezone: 'UTC', maxEventAgeSeconds: 120 });
    await h.scheduler.tick();
    await runToNextTick(schedule.id);
    const [event] = await eventsOf(schedule.id);
    h.clock.advance(120_000);
    expect(await h.events.claim(PROJECT, queue.id)).toBeNull();
    await h.sweeper.sweep();
    const row = await h.events.get(PROJECT, event.id);
    expect(row.status).toBe('expired');
    expect(row.lastError).toMatch(/^max_event_age_exceeded/);
    expect(row.expiresAt?.toISOString()).toBe('2026-03-05T01:02:00.000Z');
  });
});
