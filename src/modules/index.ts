import type { ModuleFactory } from './module.js';
import { projectsModule } from './projects/routes.js';
import { systemModule } from './system/routes.js';

/** Every module of the service, in registration order. */
export const moduleFactories: ModuleFactory[] = [systemModule, projectsModule];
