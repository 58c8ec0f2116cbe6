/**
 * 13c: Lighthouse (mobile, simulated throttling, Debian's Chromium) on the
 * console's seven pages an operator opens most: sign-in, overview,
 * marketplace, an extension, a workspace, an event and the dead letters, with
 * real content behind them (a delivered event and a dead letter).
 *
 * Lighthouse runs as its own CLI, one process per page: it drives its own
 * Chromium through the DevTools protocol, and a fresh profile per page gives
 * every page a cold cache, as on a first visit.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { subscribe, type BenchKit } from './kit.js';

const CHROMIUM = '/usr/bin/chromium';
const LIGHTHOUSE = fileURLToPath(new URL('../node_modules/.bin/lighthouse', import.meta.url));
const TARGET = { performance: 95, accessibility: 100, 'best-practices': 100 } as const;
type Category = keyof typeof TARGET;
/** Runs per page: the median one is reported. */
const RUNS = 3;

interface LighthouseReport {
  categories: Record<Category, { score: number }>;
  /** Lighthouse's measure of this machine's speed (higher is faster): the throttling assumes a fast desktop. */
  environment: { benchmarkIndex: number };
  audits: Record<string, { numericValue?: number }>;
}

export async function measureLighthouse(kit: BenchKit): Promise<void> {
  if (!existsSync(CHROMIUM) || !existsSync(LIGHTHOUSE)) {
    console.error(`skipped 13c (Lighthouse): needs ${CHROMIUM} and the lighthouse package (npm install)`);
    return;
  }
  // A subscriber that always fails, so that the dead-letter pages have a letter to show.
  const failing = createServer((_request, response) => response.writeHead(503).end());
  await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
  const address = failing.address();
  if (address === null || typeof address === 'string') throw new Error('no subscriber port');
  const daemon = await kit.startDaemon(undefined, { PLATFORM_RETRY_SCHEDULE: '10' });
  const scratch = mkdtempSync(join(tmpdir(), 'platform-lighthouse-'));
  try {
    const token = await subscribe(kit, daemon, `http://127.0.0.1:${address.port}`);
    const published = (await kit.api(daemon.url, token, 'POST', '/api/workspaces/bench/events/publish', {
      eventKey: 'bench.tick',
      payload: { n: 1, note: 'an event for the console to show' },
    })) as { meta: { eventId: string } };
    const eventId = published.meta.eventId;
    const deadLetter = async () =>
      ((await kit.api(daemon.url, token, 'GET', '/api/admin/dead-letters?limit=1')) as { data: { id: string }[] }).data[0];
    const deadline = Date.now() + 30_000;
    while (!(await deadLetter()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    const letter = await deadLetter();
    if (!letter) throw new Error('the bench event did not become a dead letter');

    const headers = join(scratch, 'headers.json');
    writeFileSync(headers, JSON.stringify({ Cookie: `platform_token=${token}` }));
    const pages: Array<[name: string, path: string, signedIn: boolean]> = [
      ['sign-in', '/login', false],
      ['overview', '/', true],
      ['marketplace', '/marketplace', true],
      ['an extension', '/marketplace/sink', true],
      ['a workspace', '/workspaces/bench', true],
      ['an event', `/workspaces/bench/events/${eventId}`, true],
      ['dead letters', '/dead-letters', true],
    ];
    /** One Lighthouse run of `path`, in a fresh Chromium profile. */
    const audit = async (path: string, signedIn: boolean): Promise<LighthouseReport> => {
      const output = join(scratch, 'report.json');
      // This harness is pinned to one core; Lighthouse and its Chromium may use both, as on a user's machine.
      const [command, ...prefix] = kit.PINNED ? ['taskset', '-c', '0,1', LIGHTHOUSE] : [LIGHTHOUSE];
      await promisify(execFile)(
        command!,
        [
          ...prefix,
          `${daemon.url}${path}`,
          '--quiet',
          '--only-categories=performance,accessibility,best-practices',
          '--output=json',
          `--output-path=${output}`,
          '--chrome-flags=--headless=new --no-sandbox --disable-gpu',
          ...(signedIn ? [`--extra-headers=${headers}`] : []),
        ],
        { env: { ...process.env, CHROME_PATH: CHROMIUM }, maxBuffer: 16 * 1024 * 1024 },
      );
      return JSON.parse(readFileSync(output, 'utf8')) as LighthouseReport;
    };
    for (const [name, path, signedIn] of pages) {
      // Lighthouse's own advice for a noisy machine: several runs, the median one reported.
      const reports: LighthouseReport[] = [];
      for (let run = 0; run < RUNS; run += 1) reports.push(await audit(path, signedIn));
      reports.sort((a, b) => a.categories.performance.score - b.categories.performance.score);
      const report = reports[Math.floor(RUNS / 2)]!;
      const score = (category: Category) => Math.round(report.categories[category].score * 100);
      const millis = (audit: string) => Math.round(report.audits[audit]?.numericValue ?? NaN);
      const performance = score('performance');
      kit.record({
        scenario: `13c. console Lighthouse, ${name} (${path.replace(eventId, '{eventId}')})`,
        value: performance,
        unit: `performance score, median of ${RUNS}`,
        p50: null,
        p99: null,
        ratio: null,
        rssMb: null,
        target: 'performance >= 95, accessibility 100, best practices 100',
        met: (Object.keys(TARGET) as Category[]).every((category) => score(category) >= TARGET[category]),
        note:
          `accessibility ${score('accessibility')}, best practices ${score('best-practices')}; ` +
          `total blocking time ${millis('total-blocking-time')} ms, largest contentful paint ${millis('largest-contentful-paint')} ms (simulated); ` +
          `the ${RUNS} runs scored ${reports.map((run) => Math.round(run.categories.performance.score * 100)).join(', ')} ` +
          `(machine benchmark index ${reports.map((run) => Math.round(run.environment.benchmarkIndex)).join(', ')})`,
      });
    }
  } finally {
    await daemon.stop();
    failing.close();
    rmSync(daemon.dataDir, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  }
}
