// The browser simulator's figures, printed, not asserted:
//   - pool decisions a second of the engine natively (vsim --bench) and in
//     wasm inside Debian's chromium, on the same heavy scenario;
//   - the page's frames a second while it simulates at 100x real time;
//   - the wasm module's size.
//
//   ./scripts/web --build-only
//   node bench/web_bench.mjs build-web/demos/web/vsim \
//     build-web/demos/web/tidepool-sim.wasm
//
// (build-web is scripts/web's release build). Needs chromium and
// playwright-core (npm install in tests/web), as the browser test does.
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';

import { browser, missing, serve } from '../tests/web/site.mjs';

const [vsim, wasm] = process.argv.slice(2);
const why = missing(wasm);
if (why || !vsim) {
  console.log('skip: ' + (why || 'usage: web_bench.mjs VSIM WASM'));
  process.exit(77);
}

// a minute of traffic far past the presets: thousands of requests a second
const HEAVY = { seconds: 60, size: 64, rate_calm: 20000, rate_burst: 60000,
  service_ms: 2, queue_max: 4096 };
const args = Object.entries(HEAVY).map(([k, v]) => `${k}=${v}`);

console.log(`wasm module: ${statSync(wasm).size} bytes (${wasm})`);
for (let i = 0; i < 3; i++)
  process.stdout.write(execFileSync(vsim, ['--bench', ...args],
    { encoding: 'utf8' }));

const site = await serve(wasm);
const chrome = await browser();
try {
  const page = await chrome.context.newPage();
  await page.goto(site.url + '?paused');
  await page.waitForFunction(() => window.tidepool && window.tidepool.ready);
  for (let i = 0; i < 3; i++) {
    const r = await page.evaluate(async (params) => {
      const { Engine, loadModule } = await import('./engine.mjs');
      const ex = await loadModule(
        await (await fetch('tidepool-sim.wasm')).arrayBuffer());
      const e = new Engine(ex, params);
      const t0 = performance.now();
      e.run(Number.MAX_SAFE_INTEGER);
      const took = (performance.now() - t0) / 1000;
      const d = e.decisions();
      e.free();
      return { d, took };
    }, HEAVY);
    console.log(`wasm in chromium: ${r.d} decisions in ${r.took.toFixed(3)} s: ` +
      `${Math.round(r.d / r.took)} decisions/s, ` +
      `${Math.round(HEAVY.seconds / r.took)}x real time`);
  }
  // the page itself at 100x: a 120 s run lasts 1.2 s of real time, so the
  // frames are counted over the first second
  await page.goto(site.url + '?speed=100&seconds=120');
  await page.waitForFunction(() => window.tidepool && window.tidepool.ready);
  await page.waitForTimeout(1000);
  const fps = await page.evaluate(() => window.tidepool.fps());
  const rows = await page.evaluate(() => window.tidepool.rows());
  console.log(`page at 100x: ${fps.toFixed(1)} frames/s (${rows} simulated ` +
    'seconds drawn in 1 s)');
} finally {
  await chrome.close();
  await site.close();
}
