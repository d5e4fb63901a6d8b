// The differential test: for fixed seeds and scenarios, the engine built to
// wasm (run here, in node) and the native engine (vsim) print the same rows,
// byte for byte, every field of every row (what the page's boards show)
// alike too, and every step (what the page's chart is drawn from).
//
//   node differential.mjs VSIM ENGINE.wasm
//
// Exit 0: every scenario agreed; 1: one did not (the first differing row of
// each is printed); 77: the wasm module or vsim is missing (no wasm
// toolchain on this machine): skipped, not passed.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

import { args, SCENARIOS } from './scenarios.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [vsim, wasm] = process.argv.slice(2);
if (!vsim || !wasm || !existsSync(vsim) || !existsSync(wasm)) {
  console.log(`skip: ${wasm} or ${vsim} missing (no wasm32 toolchain?)`);
  process.exit(77);
}
const { loadModule, Engine } =
  await import(join(here, '../../demos/web/engine.mjs'));
const ex = await loadModule(readFileSync(wasm));

let failed = 0;
for (const s of SCENARIOS) {
  const native = execFileSync(vsim, ['--fields', ...args(s)],
    { encoding: 'utf8' });
  const e = new Engine(ex, s);
  // in uneven turns, as the page runs it: rows do not depend on the turns
  const steps = [];
  const onSteps = (v) => {
    for (let i = 0; i < v.length; i += e.stepValues)
      steps.push(Array.from(v.subarray(i, i + e.stepValues)).join(' ') + '\n');
  };
  for (let t = 0; !e.done(); t += 333333337) e.run(t, onSteps);
  const lines = [];
  for (let i = 0; i < e.rows; i++) {
    lines.push(e.rowText(i) + '\n');
    const r = e.row(i);
    lines.push(e.fields.map((f) => `${f}=${r[f]}`).join(' ') + '\n');
  }
  e.free();
  const fromWasm = lines.join('');
  const name = args(s).join(' ');
  const nativeSteps = execFileSync(vsim, ['--steps', ...args(s)],
    { encoding: 'utf8', maxBuffer: 1 << 26 });
  const wasmSteps = steps.join('');
  if (wasmSteps === nativeSteps && steps.length === e.rows * 1000 + 1) {
    console.log(`ok: ${name}: ${steps.length} steps alike`);
  } else {
    failed++;
    const a = nativeSteps.split('\n');
    const i = a.findIndex((line, k) => line + '\n' !== steps[k]);
    console.log(`FAIL: ${name}: step ${i} differs (of ${steps.length})\n` +
      `  native: ${a[i]}\n  wasm:   ${steps[i]}`);
  }
  if (fromWasm === native && lines.length > 0) {
    console.log(`ok: ${name}: ${lines.length / 2} rows and their fields alike`);
    continue;
  }
  failed++;
  const a = native.split('\n'), b = fromWasm.split('\n');
  const i = a.findIndex((line, k) => line !== b[k]);
  console.log(`FAIL: ${name}: line ${i + 1} differs\n  native: ${a[i]}\n  wasm:   ${b[i]}`);
}
// A refused run names the value at fault, natively and in wasm alike.
for (const [name, value] of [['size', 0], ['size', 12.5], ['seconds', 0.5],
  ['min', 20], ['breaker', 3]]) {
  let native = '';
  try {
    execFileSync(vsim, [`${name}=${value}`], { encoding: 'utf8', stdio: 'pipe' });
  } catch (err) {
    native = err.status === 1 ? String(err.stderr).trim() : `exit ${err.status}`;
  }
  let fromWasm = '';
  try {
    new Engine(ex, { [name]: value }).free();
  } catch (err) {
    fromWasm = err.message;
  }
  const want = `${name}=${value} is out of range`;
  if (native === `vsim: ${want}` && fromWasm === want) {
    console.log(`ok: ${name}=${value} refused by name, natively and in wasm`);
    continue;
  }
  failed++;
  console.log(`FAIL: ${name}=${value}: native "${native}", wasm "${fromWasm}"`);
}

// A command line vsim cannot read is refused, exit 2, naming what.
for (const [arg, want] of [['bogus=1', "no parameter is named 'bogus'"],
  ['seed=abc', "seed: 'abc' is not a number"], ['size=12x', "size: '12x' is not a number"],
  ['size', "'size' is neither an option nor name=value"]]) {
  let said = '';
  try {
    execFileSync(vsim, [arg], { encoding: 'utf8', stdio: 'pipe' });
    said = 'exit 0';
  } catch (err) {
    said = err.status === 2 ? String(err.stderr).split('\n')[0] : `exit ${err.status}`;
  }
  if (said === `vsim: ${want}`) {
    console.log(`ok: vsim ${arg}: ${said}`);
    continue;
  }
  failed++;
  console.log(`FAIL: vsim ${arg}: "${said}", not "vsim: ${want}"`);
}

// --help is the usage and the names on stdout, exit 0.
{
  let said = '';
  try {
    said = execFileSync(vsim, ['--help'], { encoding: 'utf8', stdio: 'pipe' });
  } catch (err) {
    said = `exit ${err.status}`;
  }
  if (/^usage: .*name=value/.test(said) && /\bnames: seed seconds size\b/.test(said)) {
    console.log('ok: vsim --help: the usage and the names on stdout');
  } else {
    failed++;
    console.log(`FAIL: vsim --help: "${said.trim()}"`);
  }
}

// The module as demos/web/README.md describes it: within one 64 KiB page,
// no imports (no glue library, no WASI calls).
const bytes = readFileSync(wasm);
const imports = WebAssembly.Module.imports(new WebAssembly.Module(bytes));
if (bytes.length <= 65536 && imports.length === 0) {
  console.log(`ok: the module is ${bytes.length} bytes, no imports`);
} else {
  failed++;
  console.log(`FAIL: the module is ${bytes.length} bytes (of 65536), ` +
    `imports: ${imports.map((i) => i.module + '.' + i.name).join(' ')}`);
}
process.exit(failed ? 1 : 0);
