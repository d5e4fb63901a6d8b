// The page: runs the wasm engine on the frame clock (virtual time moves by
// the frame's real time times the speed), draws the chart from the
// engine's every step (a millisecond: steps.h) and its rows, and fills the
// boards from the core's answers. Nothing is computed here that the engine
// does not say.
//
// The chart is split in two panels over one time axis, because the pool's
// connections (a few, up to its size) and its callers (hundreds waiting in
// a burst) differ a hundredfold: on one axis lent and idle lay flat on the
// floor under the queue. Each panel has its own scale from 0. A step
// series (lent, idle, waiting) is drawn in every pixel column from all of
// the steps that fall in it: their first, lowest, highest and last value,
// so a rise within a few milliseconds shows as the jump it was, at any
// speed. The per-second counts (made, refused) are drawn as steps across
// their second.
//
// The address's query sets parameters (?seed=7&size=12&speed=1000), so a
// run can be shared and replayed exactly; window.tidepool is what the
// browser test reads.
import { Engine, loadModule, paramTable, PHASES, STATES } from './engine.mjs';

const $ = (id) => document.getElementById(id);
// every step, from the steps the engine recorded
const STEP_SERIES = [
  { key: 'lent', color: '#1f77b4', panel: 0, at: 1 },
  { key: 'idle', color: '#2ca02c', panel: 0, at: 2 },
  { key: 'waiting', color: '#ff7f0e', panel: 1, at: 3 },
];
// per simulated second, from the rows
const ROW_SERIES = [
  { key: 'made', color: '#9467bd', panel: 0, label: 'made a second' },
  { key: 'timeouts', color: '#d62728', panel: 1, label: 'refused: timeout' },
  { key: 'queue_full', color: '#8c564b', panel: 1,
    label: 'refused: queue full' },
  { key: 'shed', color: '#e377c2', panel: 1, label: 'refused: shed' },
];
// the canvas's layout, in its own pixels: the panels one over the other
const LEFT = 44, RIGHT = 16;
const PANELS = [
  { name: 'connections', title: 'connections: lent and idle at every ' +
    'step; made in each second (dashed)', top: 22, height: 150 },
  { name: 'callers', title: 'callers: waiting at every step; refused in ' +
    'each second (dashed)', top: 212, height: 190 },
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
  engine: null, rows: [], chart: null, playing: !query.has('paused'),
  speed: query.has('speed') ? Number(query.get('speed')) : 100, virtual: 0,
  last: null, frames: 0, frameTimes: [], params: {},
};

// ---- the chart's data: every step, and per pixel column its envelope ----
function newChart(seconds, width) {
  const n = seconds * 1000 + 1, cols = width - LEFT - RIGHT;
  const chart = { seconds, cols, steps: 0, gaps: 0, frames: 0, series: {} };
  for (const s of STEP_SERIES)
    chart.series[s.key] = {
      values: new Int32Array(n),
      first: new Int32Array(cols), min: new Int32Array(cols),
      max: new Int32Array(cols), last: new Int32Array(cols),
      has: new Uint8Array(cols),
    };
  return chart;
}

// The pixel column of step `ms` (the browser test maps them alike).
function column(chart, ms) {
  return Math.min(chart.cols - 1,
    Math.floor(ms * chart.cols / (chart.seconds * 1000)));
}

// Steps from the engine, [ms, lent, idle, waiting] each, oldest first.
function addSteps(v) {
  const chart = state.chart;
  for (let i = 0; i < v.length; i += 4) {
    const ms = v[i];
    // the engine gives each step once, in order; the test reads this
    if (ms !== chart.steps) chart.gaps++;
    const c = column(chart, ms);
    for (const s of STEP_SERIES) {
      const x = chart.series[s.key], value = v[i + s.at];
      x.values[ms] = value;
      if (!x.has[c]) {
        x.has[c] = 1;
        x.first[c] = x.min[c] = x.max[c] = value;
      }
      if (value < x.min[c]) x.min[c] = value;
      if (value > x.max[c]) x.max[c] = value;
      x.last[c] = value;
    }
    chart.steps = ms + 1;
  }
}

function fmtMs(ns) {
  return ns > 0 ? (ns / 1e6).toFixed(1) + ' ms' : '-';
}

// ---- controls, built from the engine's own parameter table ----
function buildControls() {
  const form = $('params');
  for (const p of paramTable(ex)) {
    if (p.name === 'seed') continue;
    const label = document.createElement('label');
    const name = document.createElement('span');
    name.textContent = p.name;
    label.appendChild(name);
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
  $('legend').innerHTML = [...STEP_SERIES, ...ROW_SERIES].map((s) =>
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
  state.chart = newChart(state.params.seconds, $('chart').width);
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
  state.chart.frames++;
  const n = e.run(state.virtual, addSteps);
  let text = '';
  while (state.rows.length < n) {
    const i = state.rows.length;
    state.rows.push(e.row(i));
    text += e.rowText(i) + '\n';
  }
  if (text) $('rows').textContent += text;
  const live = e.live();
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

// The highest value a panel shows: the pool's size at least for the
// connections, so lent at the size reads as full.
function panelTop(k) {
  const chart = state.chart;
  let top = k === 0 ? Math.max(1, state.params.size) : 1;
  for (const s of STEP_SERIES) {
    if (s.panel !== k) continue;
    const x = chart.series[s.key];
    for (let c = 0; c < chart.cols; c++)
      if (x.has[c]) top = Math.max(top, x.max[c]);
  }
  for (const s of ROW_SERIES)
    if (s.panel === k) for (const r of state.rows) top = Math.max(top, r[s.key]);
  return top;
}

function draw() {
  const canvas = $('chart');
  const g = canvas.getContext('2d');
  const chart = state.chart;
  const W = canvas.width, H = canvas.height;
  const seconds = chart.seconds;
  const x = (t) => LEFT + chart.cols * t / seconds; // t in seconds
  g.clearRect(0, 0, W, H);
  g.font = '11px sans-serif';
  const bottom = PANELS[PANELS.length - 1];
  // the phases: a line where one begins, its name under the last panel
  g.strokeStyle = '#ddd';
  g.fillStyle = '#555';
  g.lineWidth = 1;
  g.setLineDash([]);
  for (const r of state.rows)
    if (r.second === 1 || state.rows[r.second - 2].phase !== r.phase) {
      const px = Math.round(x(r.second - 1)) + 0.5;
      g.beginPath();
      g.moveTo(px, PANELS[0].top);
      g.lineTo(px, bottom.top + bottom.height);
      g.stroke();
      g.fillText(PHASES[r.phase], px + 2, bottom.top + bottom.height + 14);
    }
  g.fillText(`${seconds} s`, W - RIGHT - 24, bottom.top + bottom.height + 14);
  chart.tops = PANELS.map((p, k) => panelTop(k));
  PANELS.forEach((p, k) => {
    const top = chart.tops[k];
    const y = (v) => p.top + p.height - p.height * v / top;
    g.strokeStyle = '#999';
    g.fillStyle = '#555';
    g.lineWidth = 1;
    g.setLineDash([]);
    g.beginPath();
    g.moveTo(LEFT, p.top);
    g.lineTo(LEFT, p.top + p.height);
    g.lineTo(W - RIGHT, p.top + p.height);
    g.stroke();
    g.fillText(p.title, LEFT + 4, p.top - 6);
    g.textAlign = 'right';
    g.fillText(String(top), LEFT - 4, p.top + 4);
    g.fillText('0', LEFT - 4, p.top + p.height);
    g.textAlign = 'left';
    // every step: per column, its steps' first, lowest, highest and last
    // (lent drawn last, over idle)
    g.lineWidth = 1.5;
    for (const s of [...STEP_SERIES].reverse()) {
      if (s.panel !== k) continue;
      const v = chart.series[s.key];
      g.strokeStyle = s.color;
      g.beginPath();
      let begun = false;
      for (let c = 0; c < chart.cols; c++) {
        if (!v.has[c]) continue;
        const px = LEFT + c + 0.5;
        if (begun) g.lineTo(px, y(v.first[c]));
        else g.moveTo(px, y(v.first[c]));
        begun = true;
        g.lineTo(px, y(v.min[c]));
        g.lineTo(px, y(v.max[c]));
        g.lineTo(px, y(v.last[c]));
      }
      g.stroke();
    }
    // each second's count, level across its second
    g.lineWidth = 1;
    g.setLineDash([4, 2]);
    for (const s of ROW_SERIES) {
      if (s.panel !== k) continue;
      g.strokeStyle = s.color;
      g.beginPath();
      state.rows.forEach((r, i) => {
        const py = y(r[s.key]);
        if (i) g.lineTo(x(r.second - 1), py);
        else g.moveTo(x(r.second - 1), py);
        g.lineTo(x(r.second), py);
      });
      g.stroke();
    }
    g.setLineDash([]);
  });
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
  // what the chart is drawn from: every step received (values), per pixel
  // column the envelope drawn (first, min, max, last; has: a step fell in
  // it), the per-second series, each panel's highest value, and the frames
  // the run took, for the browser test to hold against vsim
  chart: () => {
    const c = state.chart;
    if (!c) return null;
    const out = { seconds: c.seconds, cols: c.cols, steps: c.steps,
      gaps: c.gaps, frames: c.frames, tops: c.tops || [], series: {},
      perSecond: {}, panels: PANELS.map((p) => p.name) };
    for (const s of STEP_SERIES) {
      const v = c.series[s.key];
      out.series[s.key] = { panel: s.panel,
        values: Array.from(v.values.subarray(0, c.steps)) };
      for (const f of ['first', 'min', 'max', 'last', 'has'])
        out.series[s.key][f] = Array.from(v[f]);
    }
    for (const s of ROW_SERIES)
      out.perSecond[s.key] = { panel: s.panel,
        values: state.rows.map((r) => r[s.key]) };
    return out;
  },
  done: () => !!state.engine && state.engine.done(),
  ready: true,
};
requestAnimationFrame(step);
