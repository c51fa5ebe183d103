import type { AgentView, RuntimeInstanceView } from './schemas.js';
import type { AgentRow, InstanceRow } from './store.js';

const iso = (date: Date | null) => date?.toISOString() ?? null;

export function agentView(row: AgentRow): AgentView {
  return {
    id: row.id,
    userId: row.userId,
    name: row.name,
    type: row.type,
    spec: 'monthly',
    status: row.status,
    attempts: row.attempts,
    lastError: row.lastError,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export function instanceView(row: InstanceRow): RuntimeInstanceView {
  return {
    id: row.id,
    appName: row.appName,
    url: row.url,
    cpus: row.cpus,
    memoryMb: row.memoryMb,
    volumeSizeGb: row.volumeSizeGb,
    startedAt: iso(row.startedAt),
    expiresAt: iso(row.expiresAt),
    stoppedAt: iso(row.stoppedAt),
    removedAt: iso(row.removedAt),
  };
}
