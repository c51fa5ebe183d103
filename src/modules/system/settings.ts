import { defineSettings, optionalString } from '../../platform/settings.js';

export interface SystemConfig {
  /** What /health reports (build-info.ts fills an unset one from git at start). */
  build: { commit: string | null; branch: string | null; time: string | null };
}

export const systemSettings = defineSettings({
  env: { BUILD_COMMIT: optionalString, BUILD_BRANCH: optionalString, BUILD_TIME: optionalString },
  load: (e): SystemConfig => ({ build: { commit: e.BUILD_COMMIT ?? null, branch: e.BUILD_BRANCH ?? null, time: e.BUILD_TIME ?? null } }),
});
