import { isIP } from 'node:net';
import { isPublicAddress } from '../../platform/ip-policy.js';
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

/** An address only the service can use (loopback, a private network, a provider's internal names): not shown. */
function publicUrl(url: string): string | null {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return isPublicAddress(host) ? url : null;
  return host === 'localhost' || /\.(internal|flycast|local|localhost)$/.test(host) ? null : url;
}

export function instanceView(row: InstanceRow): RuntimeInstanceView {
  return {
    id: row.id,
    appName: row.appName,
    url: publicUrl(row.url),
    cpus: row.cpus,
    memoryMb: row.memoryMb,
    volumeSizeGb: row.volumeSizeGb,
    startedAt: iso(row.startedAt),
    expiresAt: iso(row.expiresAt),
    stoppedAt: iso(row.stoppedAt),
    removedAt: iso(row.removedAt),
    removeAt: iso(row.removedAt ? null : row.removeAt),
  };
}
