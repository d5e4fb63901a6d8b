// What the browser test and the web benchmark share: the page and the wasm
// module served from a temp dir by a server on 127.0.0.1 that this process
// starts itself, and Debian's chromium driven by playwright-core (no
// browser download), with the flags that keep it from calling hosts this
// machine cannot reach.
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const page = join(here, '../../demos/web');
export const CHROMIUM = '/usr/bin/chromium';

// Why the browser cannot run here, or null when it can.
export function missing(wasm) {
  if (!wasm || !existsSync(wasm)) return `${wasm}: no wasm module (no wasm32 toolchain?)`;
  if (!existsSync(CHROMIUM)) return `${CHROMIUM} missing (apt-get install chromium)`;
  try {
    createRequire(import.meta.url).resolve('playwright-core');
  } catch {
    return 'playwright-core missing (npm install in tests/web)';
  }
  return null;
}

const TYPES = { '.html': 'text/html', '.mjs': 'text/javascript',
  '.css': 'text/css', '.wasm': 'application/wasm' };

// The site in a temp dir, served on 127.0.0.1 at an ephemeral port.
export async function serve(wasm) {
  const dir = mkdtempSync(join(tmpdir(), 'tidepool-web-'));
  for (const f of ['index.html', 'page.mjs', 'page.css', 'engine.mjs'])
    copyFileSync(join(page, f), join(dir, f));
  copyFileSync(wasm, join(dir, 'tidepool-sim.wasm'));
  const server = createServer((req, res) => {
    const name = new URL(req.url, 'http://x').pathname.slice(1) || 'index.html';
    const file = join(dir, name);
    if (name.includes('/') || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(name)] || 'text/plain' });
    res.end(readFileSync(file));
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${server.address().port}/`;
  return {
    url,
    close: async () => {
      await new Promise((ok) => server.close(ok));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// A headless chromium with a fresh profile; close() removes it.
export async function browser() {
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'tidepool-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
      '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
    viewport: { width: 1100, height: 900 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
