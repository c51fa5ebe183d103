import type { Express, Request, Response } from 'express';
import type { RouteConfig } from '@x402/core/server';
import type { Config } from './config.js';

/**
 * The payment middleware's route table. Each key is `METHOD /path` and must be spelled exactly as
 * the handler in `registerHandlers` (the startup check in route-check.ts refuses to start otherwise).
 */
export function paidRoutes(config: Config): Record<string, RouteConfig> {
  const { terms } = config;
  return {
    'GET /weather': {
      accepts: {
        scheme: terms.scheme,
        network: terms.network,
        payTo: config.payTo,
        price: { asset: terms.asset, amount: terms.price, extra: { ...terms.eip712 } },
        maxTimeoutSeconds: terms.maxTimeoutSeconds,
      },
      // The public address, not the Host header, so clients see the URL they should pay for.
      resource: `${config.publicUrl}/weather`,
      description: 'Current weather report',
      mimeType: 'application/json',
      serviceName: 'Weather (Tollgate template)',
    },
  };
}

/** Every handler of the app. Free routes need no key; paid ones need one in `paidRoutes`. */
export function registerHandlers(app: Express): void {
  app.get('/health', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/weather', weather);
}

const CONDITIONS = ['sunny', 'partly cloudy', 'cloudy', 'light rain', 'windy', 'foggy'];

/** Demo data: stable per city and hour, so repeated paid calls look plausible. */
export function weather(req: Request, res: Response): void {
  const city = typeof req.query.city === 'string' && req.query.city.trim() ? req.query.city.trim().slice(0, 100) : 'San Francisco';
  const hour = new Date();
  hour.setUTCMinutes(0, 0, 0);
  let seed = hour.getTime() / 3_600_000;
  for (const ch of city.toLowerCase()) seed = (seed * 31 + ch.charCodeAt(0)) % 2_147_483_647;
  res.json({
    city,
    observedAt: hour.toISOString(),
    temperatureC: Math.round(((seed % 350) / 10 - 5) * 10) / 10,
    humidityPercent: 30 + (seed % 60),
    windKph: seed % 40,
    conditions: CONDITIONS[seed % CONDITIONS.length],
    source: 'demo data from the Tollgate paid-server template',
  });
}
