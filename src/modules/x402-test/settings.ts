import { address, defineSettings } from '../../platform/settings.js';

export interface X402TestConfig {
  /** Receiver of the /x402-test endpoints; null = a dev receiver generated into the data dir. */
  x402TestPayTo: string | null;
}

export const x402TestSettings = defineSettings({
  env: { X402_TEST_PAY_TO: address },
  load: (e): X402TestConfig => ({ x402TestPayTo: e.X402_TEST_PAY_TO ?? null }),
});
