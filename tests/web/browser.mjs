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
//                                 INACTIVE;
//   chart_is_every_step_at_Nx     at 1x, 10x and 100x, a whole run: the
//                                 chart got every step of the run once,
//                                 each equal to vsim --steps, its pixel
//                                 columns are those steps' first, lowest,
//                                 highest and last values, and its
//                                 per-second lines are vsim's rows;
//   connections_beside_the_queue  lent at its peak fills at least half of
//                                 its panel while hundreds wait in the
//                                 other (the two have their own scales);
//   fields_apart_at_W             at common widths from 1440 to 800 px,
//                                 no parameter field, its name or a control
//                                 overlaps another, nor leaves the window
//                                 (the fields' old grid overlapped at 1440,
//                                 1200 and 960 px, not at 1280 or 800).
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
// vsim's output lines for params ({ name: value }; a value null: an option)
function native(params) {
  return execFileSync(vsim, Object.entries(params)
    .map(([k, v]) => (v === null ? k : `${k}=${v}`)),
  { encoding: 'utf8', maxBuffer: 1 << 26 }).split('\n');
}
// vsim's steps for params: { lent: [...], idle: [...], waiting: [...] },
// index the step's ms (checked in order from 0)
function nativeSteps(params) {
  const out = { lent: [], idle: [], waiting: [] };
  const lines = native({ ...params, '--steps': null });
  lines.filter((l) => l).forEach((l, k) => {
    const [ms, lent, idle, waiting] = l.split(' ').map(Number);
    if (ms !== k) throw new Error(`vsim --steps: step ${k} reads ${ms}`);
    out.lent.push(lent);
    out.idle.push(idle);
    out.waiting.push(waiting);
  });
  return out;
}
// vsim's rows for params as { field: number } each
function nativeRows(params) {
  return native({ ...params, '--fields': null })
    .filter((l) => l.startsWith('second='))
    .map((l) => Object.fromEntries(l.split(' ').map((f) => {
      const [k, v] = f.split('=');
      return [k, Number(v)];
    })));
}
// The chart's pixel columns as they must be drawn from steps: as the page
// maps a step to a column (page.mjs, column()).
function columnsOf(values, seconds, cols) {
  const c = { first: Array(cols).fill(0), min: Array(cols).fill(0),
    max: Array(cols).fill(0), last: Array(cols).fill(0),
    has: Array(cols).fill(0) };
  values.forEach((v, ms) => {
    const i = Math.min(cols - 1, Math.floor(ms * cols / (seconds * 1000)));
    if (!c.has[i]) {
      c.has[i] = 1;
      c.first[i] = c.min[i] = c.max[i] = v;
    }
    c.min[i] = Math.min(c.min[i], v);
    c.max[i] = Math.max(c.max[i], v);
    c.last[i] = v;
  });
  return c;
}
// the first index where a and b differ, or -1
function differs(a, b) {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  return a.findIndex((v, i) => v !== b[i]);
}
function query(params) {
  return '?' + Object.entries(params).map(([k, v]) => `${k}=${v}`).join('&');
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
    // a short run, slow enough that a second of INACTIVE spans many frames;
    // loaded paused and played from inside the page, so the board is read
    // in the first frame the run moves (at most 0.5 s of it at 5x: the page
    // takes at most 100 ms a frame), not after a round trip that a busy
    // machine can stretch past the outage's start
    await page.goto(site.url + '?seed=7&speed=5&seconds=8&burst_start_s=1' +
      '&burst_len_s=1&outage_start_s=3&outage_len_s=3&paused');
    await page.waitForFunction(() => window.tidepool && window.tidepool.ready,
      null, { timeout: 10000 });
    const first = await page.evaluate(() => new Promise((ok) => {
      const frame = () => {
        const clock = document.getElementById('clock').textContent;
        if (/^t = 0\.0 s/.test(clock)) requestAnimationFrame(frame);
        else ok(`${clock}: ${document.getElementById('breaker-state').textContent}`);
      };
      document.getElementById('play').click();
      requestAnimationFrame(frame);
    }));
    expect(/^t = 0\.[1-5] s: ACTIVE$/.test(first),
      `the breaker board did not start ACTIVE (${first})`);
    await page.waitForFunction(() =>
      document.getElementById('breaker-state').textContent === 'INACTIVE',
    null, { timeout: 15000, polling: 'raf' });
    const refusal = await page.locator('#breaker-refusal').textContent();
    expect(refusal === '100.0%', `refusal line ${refusal} while INACTIVE`);
    expect(errors.length === 0, 'console errors: ' + errors.join(' | '));
  });

  // At 100x the page drew a 24 s run from three frames' samples: a burst
  // that queues hundreds within 100 ms (test_steps) drew as a ramp over
  // seconds. 1x runs a short scenario with a burst, so it ends in seconds.
  const RUNS = [
    [1, { seed: 7, seconds: 4, burst_start_s: 1, burst_len_s: 1,
      outage_start_s: 3, outage_len_s: 1 }],
    [10, { seed: 7 }],
    [100, { seed: 7 }],
  ];
  let fastest = null;
  for (const [speed, params] of RUNS) {
    await check(`chart_is_every_step_at_${speed}x`, async () => {
      await page.goto(site.url + query({ ...params, speed }));
      await page.waitForFunction(() => window.tidepool && window.tidepool.ready,
        null, { timeout: 10000 });
      const seconds = await page.evaluate(() => window.tidepool.chart().seconds);
      await page.waitForFunction(() => window.tidepool.done(), null,
        { timeout: 20000 + 1000 * seconds / speed });
      const c = await page.evaluate(() => window.tidepool.chart());
      const want = nativeSteps(params);
      const steps = want.lent.length;
      console.log(`  ${speed}x: ${c.steps} steps drawn from ${c.frames} ` +
        `frames (${seconds} s simulated)`);
      expect(steps === seconds * 1000 + 1, `vsim gave ${steps} steps`);
      expect(c.steps === steps && c.gaps === 0,
        `the chart got ${c.steps} steps (${c.gaps} out of order) of ${steps}`);
      for (const key of ['lent', 'idle', 'waiting']) {
        const got = c.series[key];
        const i = differs(got.values, want[key]);
        expect(i < 0, `${key} at step ${i} ms: chart ${got.values[i]}, ` +
          `vsim ${want[key][i]}`);
        const cols = columnsOf(want[key], seconds, c.cols);
        for (const f of ['has', 'first', 'min', 'max', 'last']) {
          const j = differs(got[f], cols[f]);
          expect(j < 0, `${key}: column ${j}'s ${f} drawn ${got[f][j]}, ` +
            `from vsim's steps ${cols[f][j]}`);
        }
      }
      const rows = nativeRows(params);
      for (const [key, got] of Object.entries(c.perSecond)) {
        const i = differs(got.values, rows.map((r) => r[key]));
        expect(i < 0, `${key} in second ${i + 1}: chart ${got.values[i]}, ` +
          `vsim ${rows[i] && rows[i][key]}`);
      }
      expect(errors.length === 0, 'console errors: ' + errors.join(' | '));
      fastest = c;
    });
  }

  await check('connections_beside_the_queue', async () => {
    expect(fastest, 'no chart from the 100x run');
    const lent = Math.max(...fastest.series.lent.values);
    const waiting = Math.max(...fastest.series.waiting.values);
    const [conn, callers] = [fastest.series.lent.panel,
      fastest.series.waiting.panel];
    expect(conn !== callers, 'lent and waiting share a panel');
    expect(waiting >= 100 && fastest.tops[callers] >= waiting,
      `the callers' panel tops at ${fastest.tops[callers]}, ` +
      `${waiting} waiting`);
    expect(lent >= fastest.tops[conn] / 2,
      `lent peaks at ${lent} in a panel topping at ${fastest.tops[conn]}`);
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`screenshot: ${shot}`);
  });

  for (const width of [1440, 1366, 1280, 1200, 1024, 960, 800]) {
    await check(`fields_apart_at_${width}`, async () => {
      await page.setViewportSize({ width, height: 900 });
      await page.evaluate(() => new Promise((ok) =>
        requestAnimationFrame(() => requestAnimationFrame(ok))));
      const boxes = await page.evaluate(() => [...document.querySelectorAll(
        '#params label > span, #params input, #run button, #run select, ' +
        '#run input')].map((el) => {
        const r = el.getBoundingClientRect();
        return { what: el.id || el.name || el.textContent.trim(),
          tag: el.tagName, left: r.left, right: r.right, top: r.top,
          bottom: r.bottom };
      }));
      const inner = await page.evaluate(() => ({
        width: window.innerWidth,
        scroll: document.documentElement.scrollWidth,
      }));
      expect(boxes.length > 40, `only ${boxes.length} fields found`);
      expect(inner.scroll <= inner.width,
        `the page is ${inner.scroll} px wide in a ${inner.width} px window`);
      const name = (b) => `${b.tag.toLowerCase()} ${b.what}`;
      for (const [i, a] of boxes.entries()) {
        expect(a.right > a.left && a.left >= 0 && a.right <= inner.width,
          `${name(a)} spans ${a.left}-${a.right} of ${inner.width} px`);
        for (const b of boxes.slice(i + 1))
          expect(a.right <= b.left || b.right <= a.left ||
            a.bottom <= b.top || b.bottom <= a.top,
          `${name(a)} overlaps ${name(b)}`);
      }
    });
  }
} finally {
  await chrome.close();
  await site.close();
}
process.exit(failed ? 1 : 0);
