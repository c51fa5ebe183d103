// Dashboards and alerts shipped (issue 48 item 4): deploy/prometheus/alerts.yml passes `promtool check rules` and its
// unit tests (alerts.test.yml), deploy/grafana/tollgate.json is a well-formed dashboard, and every metric a panel or
// a rule names exists in a scrape of the service (a renamed series fails here, not on an operator's pager).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { repositoryRoot } from '../helpers/readme.js';

const alertsFile = path.join(repositoryRoot, 'deploy/prometheus/alerts.yml');
const dashboardFile = path.join(repositoryRoot, 'deploy/grafana/tollgate.json');

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid: string };
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: Array<{ expr: string; refId: string }>;
}

const dashboard = JSON.parse(fs.readFileSync(dashboardFile, 'utf8')) as { uid: string; title: string; panels: Panel[]; templating: { list: Array<{ name: string }> } };
const rules = (parse(fs.readFileSync(alertsFile, 'utf8')) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> }).groups.flatMap((g) => g.rules);

/** Metric names an expression reads (functions, labels and keywords are not: only our own and the runtime's series). */
function metricsOf(expr: string): string[] {
  const withoutLabels = expr.replace(/\{[^}]*\}/g, '').replace(/"[^"]*"/g, '');
  // A histogram's series (`…_seconds_bucket`) belong to the histogram the scrape names (`…_seconds`).
  return [...withoutLabels.matchAll(/\b((?:tollgate|process|nodejs)_[a-z0-9_]+)\b/g)].map((m) => m[1]!.replace(/_seconds_(bucket|sum|count)$/, '_seconds'));
}

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp();
}, 120_000);
afterAll(async () => app?.close());

describe('shipped dashboards and alerts', () => {
  it('the Grafana dashboard: panels with a Prometheus query each, on the datasource variable, unique ids, on the grid', () => {
    expect(dashboard.uid).toBe('tollgate');
    expect(dashboard.templating.list.map((v) => v.name)).toContain('datasource');
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const queried = dashboard.panels.filter((p) => p.type !== 'row');
    expect(queried.length).toBeGreaterThan(20);
    for (const panel of queried) {
      expect(panel.datasource?.uid, panel.title).toBe('${datasource}');
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      expect(panel.gridPos.x + panel.gridPos.w, panel.title).toBeLessThanOrEqual(24);
    }
    // What the issue asks the dashboard to show.
    const all = queried.flatMap((p) => p.targets!.map((t) => t.expr)).join('\n');
    for (const series of ['tollgate_http_requests_total', 'tollgate_facilitator_settlements_total', 'tollgate_facilitator_duration_seconds_bucket', 'tollgate_relayer_float_wei', 'tollgate_relayer_gas_spent_total', 'tollgate_queue_depth', 'tollgate_queue_oldest_ready_age_seconds', 'tollgate_loop_active', 'tollgate_db_pool_waiting_queries']) {
      expect(all).toContain(series);
    }
  });

  it('the alert rules cover what the issue names', () => {
    expect(rules.map((r) => r.alert)).toEqual(
      expect.arrayContaining(['TollgateRelayerFloatLow', 'TollgateSettlesFailing', 'TollgateLeaderLoopAbsent', 'TollgateQueueOldEvents', 'TollgateNotReady', 'TollgateDatabasePoolExhausted']),
    );
  });

  it('every metric a panel or a rule names exists in a scrape of the service', async () => {
    // A little traffic on each origin, so nothing is left out for having seen no request.
    for (const url of Object.values(app.urls)) await fetch(`${url}/health`);
    const scraped = new Set<string>();
    for (const url of Object.values(app.urls)) {
      const text = await (await fetch(`${url}/metrics`)).text();
      for (const match of text.matchAll(/^# TYPE (\S+) /gm)) scraped.add(match[1]!);
    }
    const named = new Map<string, string>();
    for (const panel of dashboard.panels) for (const target of panel.targets ?? []) for (const metric of metricsOf(target.expr)) named.set(metric, `panel "${panel.title}"`);
    for (const rule of rules) for (const metric of metricsOf(rule.expr)) named.set(metric, `alert ${rule.alert}`);
    expect(named.size).toBeGreaterThan(25);
    const missing = [...named].filter(([metric]) => !scraped.has(metric)).map(([metric, where]) => `${metric} (${where})`);
    expect(missing).toEqual([]);
  });

  it('promtool check rules and promtool test rules pass (Debian prometheus; .ci/run installs it)', async (context) => {
    const promtool = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((file) => fs.existsSync(file));
    if (!promtool) {
      if (process.env.CI) throw new Error('promtool is missing: .ci/run installs Debian\'s prometheus package');
      context.skip();
      return;
    }
    const run = promisify(execFile);
    const checked = await run(promtool, ['check', 'rules', alertsFile]);
    expect(checked.stdout).toContain('SUCCESS');
    const tested = await run(promtool, ['test', 'rules', 'alerts.test.yml'], { cwd: path.dirname(alertsFile) });
    expect(tested.stdout).toContain('SUCCESS');
  });
});
