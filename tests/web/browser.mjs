// The page in a real browser: Debian's chromium driven by playwright-core.
//
//   node browser.mjs VSIM ENGINE.wasm [SCREENSHOT.png]
//
// Each check is named for what a user relies on:
//   loads_without_console_error   the page and its module load cleanly;
//   chart_draws_over_time         the canvas's pixels change as it runs;
//   rows_shown_equal_native       after N simulated seconds the rows on the
//                                 page are vsim's rows for the same seed;
//   larger_pool_waits_less        a pool size set on the page changes the
//                                 engine's answers: less waiting in the burst
//                                 (and the rows are vsim's for that size);
//   bad_query_refused_by_name     an address with a value the engine or
//                                 the page cannot use (speed=abc, size=0,
//                                 seed=abc) refuses the run and names the
//                                 value where the clock is, nothing thrown;
//   outage_opens_breaker_board    in the outage the breaker board reads
//                                 INACTIVE.
// Exit 0 all passed, 1 one failed, 77 chromium, playwright-core or the wasm
// module is missing (skipped, not passed). Saves a screenshot.
import { execFileSync } from 'node:child_process';

import { browser, missing, serve } from './site.mjs';

const [vsim, wasm, shot = 'tidepool-web.png'] = process.argv.slice(2);
const why = missing(wasm);
if (why) {
  console.log('skip: ' + why);
  process.exit(77);
}

const ROWS = 12;
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    console.log(`ok: ${name}`);
  } catch (err) {
    failed++;
    console.log(`FAIL: ${name}: ${err.message}`);
  }
}
function expect(cond, what) {
  if (!cond) throw new Error(what);
}
function native(params) {
  return execFileSync(vsim, Object.entries(params).map(([k, v]) => `${k}=${v}`),
    { encoding: 'utf8' }).split('\n');
}
// the waiting column (the fifth) of the rows in the burst
function burstWaiting(lines) {
  return lines.filter((l) => / burst /.test(l))
    .map((l) => Number(l.trim().split(/\s+/)[4]));
}

const site = await serve(wasm);
const chrome = await browser();
const errors = [];
const page = await chrome.context.newPage();
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
page.on('pageerror', (e) => errors.push(e.message));

try {
  await check('loads_without_console_error', async () => {
    await page.goto(site.url + '?seed=7&speed=10');
    await page.waitForFunction(() => window.tidepool && window.tidepool.ready,
      null, { timeout: 10000 });
    await page.waitForFunction(() => window.tidepool.rows() >= 1, null,
      { timeout: 10000 });
    expect(errors.length === 0, 'console errors: ' + errors.join(' | '));
  });

  await check('chart_draws_over_time', async () => {
    const pixels = () => page.evaluate(() =>
      document.getElementById('chart').toDataURL());
    const first = await pixels();
    const rows = await page.evaluate(() => window.tidepool.rows());
    await page.waitForFunction((n) => window.tidepool.rows() >= n, rows + 3,
      { timeout: 10000 });
    const later = await pixels();
    expect(first !== later, 'the canvas did not change in three simulated seconds');
    const blank = await page.evaluate(() => {
      const c = document.getElementById('chart');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      for (let i = 3; i < d.length; i += 4) if (d[i]) return false;
      return true;
    });
    expect(!blank, 'the canvas is blank');
  });

  await check('rows_shown_equal_native', async () => {
    await page.waitForFunction((n) => window.tidepool.rows() >= n, ROWS,
      { timeout: 20000 });
    const shown = (await page.locator('#rows').textContent()).split('\n')
      .slice(0, ROWS);
    const want = native({ seed: 7 }).slice(0, ROWS);
    for (let i = 0; i < ROWS; i++)
      expect(shown[i] === want[i],
        `row ${i + 1}: page "${shown[i]}" vs native "${want[i]}"`);
  });

  await check('larger_pool_waits_less', async () => {
    await page.fill('#seed', '7');
    await page.fill('#param-size', '16');
    await page.click('#restart');
    await page.waitForFunction((n) => window.tidepool.rows() >= n, ROWS,
      { timeout: 20000 });
    const shown = (await page.locator('#rows').textContent()).split('\n')
      .slice(0, ROWS);
    const want = native({ seed: 7, size: 16 }).slice(0, ROWS);
    expect(shown.join('\n') === want.join('\n'),
      'the rows for size 16 are not vsim\'s for size=16');
    const small = burstWaiting(native({ seed: 7 }).slice(0, ROWS));
    const large = burstWaiting(shown);
    const sum = (a) => a.reduce((x, y) => x + y, 0);
    expect(large.length > 0 && sum(large) < sum(small),
      `waiting in the burst: size 16 ${large} vs size 8 ${small}`);
  });

  await check('bad_query_refused_by_name', async () => {
    const cases = [
      ['?speed=abc', 'refused: speed=abc is not a number above 0'],
      ['?speed=-5', 'refused: speed=-5 is not a number above 0'],
      ['?speed=1e300', 'refused: speed=1e300 is not a number above 0'],
      ['?size=0', 'refused: size=0 is out of range'],
      ['?seed=7&min=20', 'refused: min=20 is out of range'],
      ['?seed=abc', 'refused: seed: not a number'],
      ['?keep_s=abc', 'refused: keep_s: not a number'],
    ];
    for (const [query, want] of cases) {
      const before = errors.length;
      await page.goto(site.url + query);
      await page.waitForFunction(() => window.tidepool && window.tidepool.ready,
        null, { timeout: 10000 });
      // ten frames, so that an error the frame loop throws would show
      await page.evaluate(() => new Promise((ok) => {
        let n = 0;
        const frame = () => (++n < 10 ? requestAnimationFrame(frame) : ok());
        requestAnimationFrame(frame);
      }));
      const clock = await page.locator('#clock').textContent();
      expect(clock.startsWith(want),
        `${query}: the clock reads "${clock}", not "${want}..."`);
      expect(await page.evaluate(() => window.tidepool.rows()) === 0,
        `${query}: rows were shown for a refused run`);
      expect(errors.length === before,
        `${query}: console errors: ${errors.slice(before).join(' | ')}`);
    }
  });

  await check('outage_opens_breaker_board', async () => {
    // a short run, slow enough that a second of INACTIVE spans many frames
    await page.goto(site.url + '?seed=7&speed=5&seconds=8&burst_start_s=1' +
      '&burst_len_s=1&outage_start_s=3&outage_len_s=3');
    await page.waitForFunction(() => window.tidepool && window.tidepool.ready,
      null, { timeout: 10000 });
    expect(await page.locator('#breaker-state').textContent() === 'ACTIVE',
      'the breaker board did not start ACTIVE');
    await page.waitForFunction(() =>
      document.getElementById('breaker-state').textContent === 'INACTIVE',
    null, { timeout: 15000, polling: 'raf' });
    const refusal = await page.locator('#breaker-refusal').textContent();
    expect(refusal === '100.0%', `refusal line ${refusal} while INACTIVE`);
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`screenshot: ${shot}`);
    expect(errors.length === 0, 'console errors: ' + errors.join(' | '));
  });
} finally {
  await chrome.close();
  await site.close();
}
process.exit(failed ? 1 : 0);
