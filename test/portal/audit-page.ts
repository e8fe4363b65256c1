// The harness every page of the portal and of the holder's panel goes through in a real browser:
// axe-core (WCAG 2.1 A and AA, best practice) injected into the page at 1280, 390 and 320 px wide
// and in the dark scheme, no page wider than the screen, and a screenshot of each width.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, chromium, type Page } from 'playwright-core';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'];
export const WIDTHS = [1280, 390, 320] as const;

// As root in a closed network: no sandbox, and none of Chromium's background connections.
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Debian's Chromium, as the portal's browser tests drive it. */
export function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: [...CHROMIUM_ARGS, ...extraArgs] });
}

interface Violation {
  id: string;
  impact: string;
  help: string;
  nodes: { target: string[]; failureSummary: string }[];
}

/** axe-core's violations on the page as it is now, one line per element. */
export async function axeViolations(page: Page): Promise<string[]> {
  // The pages' policy allows no script: the context that audits them bypasses it (bypassCSP).
  if (!(await page.evaluate('typeof window.axe === "object"')))
    await page.addScriptTag({ content: AXE_SOURCE });
  const violations = (await page.evaluate(
    `axe.run(document, { runOnly: { type: 'tag', values: ${JSON.stringify(AXE_TAGS)} }, resultTypes: ['violations'] }).then((r) => r.violations)`,
  )) as Violation[];
  return violations.flatMap((v) =>
    v.nodes.map(
      (node) => `${v.id} (${v.impact}): ${v.help} at ${node.target.join(' ')}: ${node.failureSummary}`,
    ),
  );
}

/**
 * Checks the page as it is loaded (a refused form included: nothing is loaded again) at every
 * width and, at the first, in the dark scheme; fails on any violation or sideways scrolling.
 */
export async function auditPage(page: Page, name: string, screenshots?: string): Promise<void> {
  const problems: string[] = [];
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of scheme === 'light' ? WIDTHS : WIDTHS.slice(0, 1)) {
      await page.setViewportSize({ width, height: 900 });
      for (const line of await axeViolations(page)) problems.push(`${width}px ${scheme}: ${line}`);
      const scrollWidth = Number(await page.evaluate('document.documentElement.scrollWidth'));
      if (scrollWidth > width) problems.push(`${width}px ${scheme}: the page is ${scrollWidth}px wide`);
      if (screenshots && scheme === 'light') {
        await page.screenshot({ path: `${screenshots}${name}-${width}.png`, fullPage: true });
      }
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: WIDTHS[0], height: 900 });
  assert.deepEqual(problems, [], `${name}:\n${problems.join('\n')}`);
}
