// The page: runs the wasm engine on the frame clock (virtual time moves by
// the frame's real time times the speed), draws the chart from its rows and
// its live view, and fills the boards from the core's answers. Nothing is
// computed here that the engine does not say.
//
// The address's query sets parameters (?seed=7&size=12&speed=1000), so a
// run can be shared and replayed exactly; window.tidepool is what the
// browser test reads.
import { Engine, loadModule, PHASES, STATES } from './engine.mjs';

const $ = (id) => document.getElementById(id);
const SERIES = [
  // per frame, from the live view
  { key: 'lent', color: '#1f77b4', live: true },
  { key: 'idle', color: '#2ca02c', live: true },
  { key: 'waiting', color: '#ff7f0e', live: true },
  // per simulated second, from the rows
  { key: 'made', color: '#9467bd' },
  { key: 'timeouts', color: '#d62728', label: 'refused: timeout' },
  { key: 'queue_full', color: '#8c564b', label: 'refused: queue full' },
  { key: 'shed', color: '#e377c2', label: 'refused: shed' },
];

const ex = await loadModule(
  await (await fetch('tidepool-sim.wasm')).arrayBuffer());
const query = new URLSearchParams(location.search);

// The speed (virtual time per real time, preset 100x): above 0 and at most
// a million, where one frame already covers the longest run. Beyond, the
// virtual clock would outgrow the int64 the engine takes; NaN ("?speed=abc")
// would throw on every frame. Anything else refuses the run, by name.
const SPEED_MAX = 1e6;
const speedOk = (v) => Number.isFinite(v) && v > 0 && v <= SPEED_MAX;

const state = {
  engine: null, rows: [], samples: [], playing: !query.has('paused'),
  speed: query.has('speed') ? Number(query.get('speed')) : 100, virtual: 0,
  last: null, frames: 0, frameTimes: [], params: {},
};

function fmtMs(ns) {
  return ns > 0 ? (ns / 1e6).toFixed(1) + ' ms' : '-';
}

// ---- controls, built from the engine's own parameter table ----
function buildControls() {
  const form = $('params');
  for (const p of new Engine(ex).table) {
    if (p.name === 'seed') continue;
    const label = document.createElement('label');
    label.textContent = p.name;
    const input = document.createElement('input');
    input.type = 'number';
    input.step = 'any';
    input.name = p.name;
    input.id = 'param-' + p.name;
    input.value = query.has(p.name) ? query.get(p.name) : p.preset;
    label.appendChild(input);
    form.appendChild(label);
  }
  $('seed').value = query.get('seed') || 1;
  if (speedOk(state.speed) &&
      ![...$('speed').options].some((o) => Number(o.value) === state.speed))
    $('speed').add(new Option(`${state.speed}×`, String(state.speed)));
  $('speed').value = String(state.speed);
  $('legend').innerHTML = SERIES.map((s) =>
    `<span><i style="background:${s.color}"></i>${s.label || s.key}</span>`)
    .join('');
  $('heads').textContent = new TextDecoder().decode((() => {
    const mem = new Uint8Array(ex.memory.buffer);
    let p = ex.row_heads(), e = p;
    while (mem[e]) e++;
    return mem.slice(p, e);
  })());
}

// The form's values, and the names of the fields left blank: a number
// input drops what is not a number (a query's "?seed=abc" too), and
// Number('') is 0, so a blank field is refused by name rather than run as 0.
function readParams() {
  const params = {}, blank = [];
  for (const input of [$('seed'), ...$('params').querySelectorAll('input')]) {
    const name = input.name || input.id;
    if (input.value.trim() === '') blank.push(name);
    params[name] = Number(input.value);
  }
  return { params, blank };
}

function restart() {
  if (state.engine) state.engine.free();
  const { params, blank } = readParams();
  state.params = params;
  if (blank.length) {
    state.engine = null;
    $('clock').textContent = `refused: ${blank.join(', ')}: not a number`;
    return;
  }
  if (!speedOk(state.speed)) {
    state.engine = null;
    $('clock').textContent = `refused: speed=${query.get('speed')} is not ` +
      `a number above 0 and at most ${SPEED_MAX}`;
    return;
  }
  try {
    state.engine = new Engine(ex, state.params);
  } catch (err) {
    state.engine = null;
    $('clock').textContent = 'refused: ' + err.message;
    return;
  }
  state.rows = [];
  state.samples = [];
  state.virtual = 0;
  state.last = null;
  $('rows').textContent = '';
}

// ---- the frame ----
function step(now) {
  requestAnimationFrame(step);
  state.frames++;
  state.frameTimes.push(now);
  if (state.frameTimes.length > 120) state.frameTimes.shift();
  const dt = state.last === null ? 0 : Math.min(now - state.last, 100);
  state.last = now;
  const e = state.engine;
  if (!e || !state.playing || e.done()) return;
  state.virtual += dt * 1e6 * state.speed;
  const n = e.run(state.virtual);
  let text = '';
  while (state.rows.length < n) {
    const i = state.rows.length;
    state.rows.push(e.row(i));
    text += e.rowText(i) + '\n';
  }
  if (text) $('rows').textContent += text;
  const live = e.live();
  state.samples.push({ t: e.now() / 1e9, ...live });
  draw();
  showBoards(live);
}

function showBoards(live) {
  const e = state.engine;
  const row = state.rows[state.rows.length - 1];
  const t = e.now() / 1e9;
  $('clock').textContent = `t = ${t.toFixed(1)} s` + (e.done() ? ' (run over)' : '');
  $('phase').textContent = PHASES[live.phase];
  const b = STATES[live.breaker];
  $('breaker-state').textContent = b;
  $('breaker-state').className = live.breaker === 0 ? '' : 'open';
  $('breaker-refusal').textContent = (live.refusal_pm / 10).toFixed(1) + '%';
  $('shedder-lent').textContent = String(live.lent);
  $('breaker-retry').textContent = fmtMs(live.retry_after_ns);
  if (!row) return;
  $('breaker-shed').textContent = String(row.shed_breaker);
  $('bucket-holds').textContent = String(row.later_bucket);
  $('bucket-span').textContent = fmtMs(row.bucket_span_ns);
  $('backoff-holds').textContent = String(row.later_backoff);
  $('backoff-span').textContent = fmtMs(row.backoff_span_ns);
  $('backoff-failed').textContent = String(row.make_failures);
  $('shedder-shed').textContent = String(row.shed_shedder);
  $('bucket-tokens').textContent =
    row.bucket_milli < 0 ? 'none' : (row.bucket_milli / 1000).toFixed(2);
  $('backoff-hold').textContent = fmtMs(row.backoff_hold_ns);
  $('shedder-ceiling').textContent =
    row.ceiling_milli < 0 ? 'none' : (row.ceiling_milli / 1000).toFixed(2);
}

function draw() {
  const canvas = $('chart');
  const g = canvas.getContext('2d');
  const W = canvas.width, H = canvas.height, pad = 30;
  const seconds = state.params.seconds;
  g.clearRect(0, 0, W, H);
  let top = 1;
  for (const s of state.samples) top = Math.max(top, s.lent, s.idle, s.waiting);
  for (const r of state.rows)
    for (const s of SERIES) if (!s.live) top = Math.max(top, r[s.key]);
  const x = (t) => pad + (W - 2 * pad) * t / seconds;
  const y = (v) => H - pad - (H - 2 * pad) * v / top;
  g.strokeStyle = '#999';
  g.fillStyle = '#555';
  g.font = '11px sans-serif';
  g.beginPath();
  g.moveTo(pad, pad); g.lineTo(pad, H - pad); g.lineTo(W - pad, H - pad);
  g.stroke();
  g.fillText(String(top), 2, pad + 4);
  g.fillText('0', 2, H - pad);
  g.fillText(`${seconds} s`, W - pad - 10, H - pad + 14);
  // the phases under the axis, as the rows name them
  for (const r of state.rows)
    if (r.second === 1 || state.rows[r.second - 2].phase !== r.phase)
      g.fillText(PHASES[r.phase], x(r.second - 1) + 2, H - pad + 14);
  for (const s of SERIES) {
    g.strokeStyle = s.color;
    g.lineWidth = s.live ? 1.5 : 1;
    g.beginPath();
    if (s.live)
      state.samples.forEach((p, i) =>
        i ? g.lineTo(x(p.t), y(p[s.key])) : g.moveTo(x(p.t), y(p[s.key])));
    else
      state.rows.forEach((r, i) => {
        const px = x(r.second - 0.5), py = y(r[s.key]);
        i ? g.lineTo(px, py) : g.moveTo(px, py);
      });
    g.stroke();
  }
}

// ---- wiring ----
buildControls();
restart();
$('play').onclick = () => {
  state.playing = !state.playing;
  $('play').textContent = state.playing ? 'pause' : 'play';
};
if (!state.playing) $('play').textContent = 'play';
$('speed').onchange = () => { state.speed = Number($('speed').value); };
$('restart').onclick = restart;

window.tidepool = {
  rows: () => state.rows.length,
  rowTexts: () => $('rows').textContent,
  // frames a second over the last (up to) 120 frames
  fps: () => {
    const f = state.frameTimes;
    return f.length < 2 ? 0 : 1000 * (f.length - 1) / (f[f.length - 1] - f[0]);
  },
  decisions: () => state.engine ? state.engine.decisions() : 0,
  done: () => !!state.engine && state.engine.done(),
  ready: true,
};
requestAnimationFrame(step);
