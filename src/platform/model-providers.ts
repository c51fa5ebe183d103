// The model providers Tollgate calls for its users (hosted agents, trading agents), each over its own wire
// protocol at the base URL the operator configures (AGENT_*_BASE_URL), with the user's own key.

export const MODEL_PROVIDERS = ['openai', 'anthropic', 'openrouter'] as const;
export type ModelProvider = (typeof MODEL_PROVIDERS)[number];

/** The start and end of a key, the rest hidden: enough to tell keys apart, never enough to use one. */
export function maskKey(key: string): string {
  if (key.length <= 8) return '…';
  return `${key.slice(0, 4)}…${key.slice(-4)}`;
}
