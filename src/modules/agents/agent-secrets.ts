import type { Config } from '../../config.js';
import { createKeySealer } from '../../platform/master-key.js';
import type { KeySealer } from '../../platform/sealing.js';
import type { ModelProvider } from './tables.js';

/**
 * The agents module's secrets at rest, sealed under the master key: each runtime's bearer token (bound to
 * its instance) and each model-provider key (bound to its agent and provider).
 */
export class AgentSecrets {
  readonly #sealer: KeySealer;

  constructor(config: Config) {
    this.#sealer = createKeySealer(config);
  }

  seal(instanceId: string, token: string): string {
    return this.#sealer.seal(Buffer.from(token), runtimeTokenBinding(instanceId));
  }

  open(instanceId: string, sealed: string): string {
    return this.#sealer.open(sealed, runtimeTokenBinding(instanceId)).toString();
  }

  sealProviderKey(agentId: string, provider: ModelProvider, key: string): string {
    return this.#sealer.seal(Buffer.from(key), providerKeyBinding(agentId, provider));
  }

  openProviderKey(agentId: string, provider: ModelProvider, sealed: string): string {
    return this.#sealer.open(sealed, providerKeyBinding(agentId, provider)).toString();
  }
}

/** The associated data a runtime's token is sealed with (its instance), and a provider key's (its agent and provider). */
export const runtimeTokenBinding = (instanceId: string) => `agent-runtime:${instanceId}`;
export const providerKeyBinding = (agentId: string, provider: string) => `agent-provider:${agentId}:${provider}`;

/** What the deployer needs: sealing runtime tokens. */
export type RuntimeTokens = Pick<AgentSecrets, 'seal'>;
