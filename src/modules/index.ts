import type { ModuleFactory } from './module.js';
import { agentsModule } from './agents/routes.js';
import { creditsModule } from './credits/module.js';
import { devModule } from './dev/routes.js';
import { eventsModule } from './events/module.js';
import { facilitatorModule } from './facilitator/routes.js';
import { intentsModule } from './intents/routes.js';
import { mcpModule } from './mcp/module.js';
import { oauthModule } from './oauth/module.js';
import { projectsModule } from './projects/routes.js';
import { relayModule } from './relay/module.js';
import { storageModule } from './storage/module.js';
import { tradingModule } from './trading/module.js';
import { webModule } from './web/module.js';
import { systemModule } from './system/routes.js';
import { txapiModule } from './txapi/module.js';
import { walletsModule } from './wallets/routes.js';
import { x402TestModule } from './x402-test/routes.js';

/** Every module of the service, in registration order. */
export const moduleFactories: ModuleFactory[] = [systemModule, projectsModule, intentsModule, walletsModule, oauthModule, mcpModule, eventsModule, facilitatorModule, x402TestModule, devModule, txapiModule, storageModule, relayModule, creditsModule, agentsModule, tradingModule, webModule];
