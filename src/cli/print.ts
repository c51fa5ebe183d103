// How the CLI prints what an instance answers: the status of a running instance, an audit row as one line, and
// where the key rotation stands. The answers' shapes as the CLI reads them, and formatting only.
import path from 'node:path';

export interface AuditLine {
  at: string;
  actor: { kind: string; id: string };
  action: string;
  target: string | null;
  projectId: string | null;
  requestId: string;
  via: string;
  outcome: string;
  status: number | null;
  detail: Record<string, unknown> | null;
}

export function auditLine(entry: AuditLine): string {
  const outcome = entry.status === null ? entry.outcome : `${entry.outcome} ${entry.status}`;
  const error = entry.detail?.code ?? entry.detail?.error;
  return [entry.at, `${entry.actor.kind}:${entry.actor.id}`, entry.action, entry.target ?? '-', outcome + (error ? ` (${String(error)})` : ''), `request ${entry.requestId}`, entry.projectId ? `project ${entry.projectId}` : '']
    .filter(Boolean)
    .join('  ');
}

interface KeyCounts {
  name: string;
  current: number;
  previous: number;
  legacy?: number;
  unknown: number;
}

export interface KeyStatus {
  pepper: { current: string; previous: string | null; columns: KeyCounts[] };
  masterKey: { current: string; previous: string | null; columns: KeyCounts[] };
}

export interface KeyBatch {
  done: number;
  remaining: number;
  stuck: KeyCounts[];
}

export function printKeyStatus(status: KeyStatus): void {
  const part = (label: string, side: KeyStatus['pepper']) => {
    console.log(`${label.padEnd(12)} current ${side.current}${side.previous ? `, previous ${side.previous}` : ', no previous'}`);
    for (const c of side.columns) {
      const counts = [`current ${c.current}`, `previous ${c.previous}`, ...(c.legacy === undefined ? [] : [`legacy ${c.legacy}`]), `other ${c.unknown}`];
      console.log(`  ${c.name.padEnd(40)} ${counts.join('  ')}`);
    }
  };
  part('pepper', status.pepper);
  part('master key', status.masterKey);
}

export interface InstanceStatus {
  dataDir: string;
  roles: string[];
  origins: Record<string, string>;
  loops: { name: string; active: boolean; intervalMs: number; lastRunAt: string | null; lagMs: number; consecutiveFailures: number; lastError: { message: string; at: string } | null }[];
  relayer: { floatWei: string | null; publicFloorWei: string; floorWei: string; keys: { address: string; balanceWei: string }[] } | null;
}

export function printStatus(status: InstanceStatus): void {
  console.log(`data dir     ${path.resolve(status.dataDir)}`);
  console.log(`roles        ${status.roles.join(', ')}`);
  for (const [origin, url] of Object.entries(status.origins)) console.log(`${origin.padEnd(12)} ${url}`);
  if (status.loops.length === 0) console.log('loops        none (no worker role here)');
  for (const loop of status.loops) {
    const state = loop.active ? `last run ${loop.lastRunAt ?? 'not yet'}, lag ${loop.lagMs} ms, ${loop.consecutiveFailures} failures in a row` : 'idle (another node leads it)';
    const error = loop.lastError ? `; last error at ${loop.lastError.at}: ${loop.lastError.message}` : '';
    console.log(`loop ${loop.name}: ${state}${error}`);
  }
  if (status.relayer) {
    const { floatWei, publicFloorWei, floorWei, keys } = status.relayer;
    console.log(`relayer      float ${floatWei === null ? 'unknown (the chain did not answer)' : `${floatWei} wei`}; public /settle and relay stop below ${publicFloorWei} wei, every settle below ${floorWei} wei`);
    for (const key of keys) console.log(`relayer key  ${key.address} ${key.balanceWei} wei`);
  }
}
