import { ApiError } from '../../platform/http/errors.js';

// Agents answer in the envelope family; `data.reason` names the condition.
const fail = (status: number, reason: string, message: string, extra?: Record<string, unknown>) => new ApiError(status, reason, message, { reason, ...extra });

export const agentsErrors = {
  notFound: () => fail(404, 'agent_not_found', 'No such agent for this user'),
  notRunning: (status: string) => fail(409, 'agent_not_running', `The agent's runtime is not running (agent ${status}); pending agents are being deployed`, { status }),
  runtimeUnavailable: () => fail(503, 'runtime_unavailable', 'The agent runtime is restarting; retry shortly'),
  providerNotConfigured: () => fail(409, 'provider_not_configured', 'Configure a model provider for this agent first (PUT /agents/{agentId}/providers)'),
  providerFailed: (message: string, providerStatus: number | null) => fail(502, 'provider_failed', message, { providerStatus }),
};
