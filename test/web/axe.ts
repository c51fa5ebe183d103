// axe-core (Deque's accessibility engine) run in a page: its source evaluated there (the context must bypass the
// pages' CSP, which allows no script but theirs), then `axe.run` over the whole document.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's violations on the page as it is now (WCAG 2.x A and AA, and best practices), as "rule: targets". */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const result = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] })`)) as { violations: { id: string; nodes: { target: string[] }[] }[] };
  return result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}
