import type { Config } from '../../config.js';
import { loadMasterKey } from '../../platform/master-key.js';
import { KeySealer } from '../../platform/sealing.js';
import type { ModelProvider } from './tables.js';

/**
 * The agents module's secrets at rest, sealed under the master key: each runtime's bearer token (bound to
 * its instance) and each model-provider key (bound to its agent and provider).
 */
export class AgentSecrets {
  readonly #sealer: KeySealer;

  constructor(config: Config) {
    this.#sealer = new KeySealer(loadMasterKey(config).key);
  }

  seal(instanceId: string, token: string): string {
    return this.#sealer.seal(Buffer.from(token), `agent-runtime:${instanceId}`);
  }

  open(instanceId: string, sealed: string): string {
    return this.#sealer.open(sealed, `agent-runtime:${instanceId}`).toString();
  }

  sealProviderKey(agentId: string, provider: ModelProvider, key: string): string {
    return this.#sealer.seal(Buffer.from(key), `agent-provider:${agentId}:${provider}`);
  }

  openProviderKey(agentId: string, provider: ModelProvider, sealed: string): string {
    return this.#sealer.open(sealed, `agent-provider:${agentId}:${provider}`).toString();
  }
}

/** What the deployer needs: sealing runtime tokens. */
export type RuntimeTokens = Pick<AgentSecrets, 'seal'>;
