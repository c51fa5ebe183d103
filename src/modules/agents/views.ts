import type { AgentView } from './schemas.js';
import type { AgentRow } from './store.js';

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
