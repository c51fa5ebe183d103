import express from 'express';
import { describe, expect, it } from 'vitest';
import { compareRouteKeys, listHandlerRoutes } from '../src/route-check.js';

const ok = () => undefined;

describe('listHandlerRoutes', () => {
  it('lists direct, multi-path, all-method and mounted-router handlers', () => {
    const app = express();
    app.use(express.json());
    app.get('/health', ok);
    app.route('/a').get(ok).post(ok);
    app.get(['/b', '/c'], ok);
    const router = express.Router();
    router.get('/in', ok);
    app.use('/sub', router);
    const routes = listHandlerRoutes(app);
    expect(routes).toEqual(
      expect.arrayContaining([
        { method: 'GET', path: '/health' },
        { method: 'GET', path: '/a' },
        { method: 'POST', path: '/a' },
        { method: 'GET', path: '/b' },
        { method: 'GET', path: '/c' },
        { method: 'GET', path: '/sub/in' },
      ]),
    );
  });
});

describe('compareRouteKeys', () => {
  const handlers = [
    { method: 'GET', path: '/health' },
    { method: 'GET', path: '/weather' },
  ];

  it('passes when every key names a handler exactly', () => {
    expect(compareRouteKeys(['GET /weather'], handlers)).toEqual([]);
  });

  it('flags a key without a handler', () => {
    expect(compareRouteKeys(['GET /forecast'], handlers)).toEqual([expect.stringMatching(/"GET \/forecast" has no handler/)]);
    expect(compareRouteKeys(['POST /weather'], handlers)).toEqual([expect.stringMatching(/no handler/)]);
  });

  it('flags handlers that differ only by case, slashes or escapes', () => {
    for (const path of ['/Weather', '/weather/', '//weather', '/weathe%72']) {
      const found = compareRouteKeys(['GET /weather'], [{ method: 'GET', path }]);
      expect(found, path).toEqual([expect.stringMatching(/no handler/), expect.stringMatching(/only by case/)]);
    }
  });

  it('refuses keys that are not METHOD /path', () => {
    for (const key of ['/weather', 'get /weather', '* /weather', 'GET  /weather', 'GET weather', '*']) {
      expect(compareRouteKeys([key], handlers)[0], key).toMatch(/must be "METHOD \/path"/);
    }
  });
});
