// The engine compiled to wasm32, from JavaScript: loads the module (no
// imports, no glue library) and wraps its exports. Used by the page and by
// the differential test in node alike, so both read the engine the same way.
//
// Memory is the module's: every buffer here is malloc'd in it, and the
// typed arrays over it are made afresh after each call that may allocate
// (a grown memory detaches the old buffer).

const decoder = new TextDecoder();

export async function loadModule(bytes) {
  const { instance } = await WebAssembly.instantiate(bytes, {});
  return instance.exports;
}

function cString(ex, ptr) {
  const mem = new Uint8Array(ex.memory.buffer);
  let end = ptr;
  while (mem[end] !== 0) end++;
  return decoder.decode(mem.subarray(ptr, end));
}

// The parameters' names and presets, as the engine's table has them.
export function paramTable(ex) {
  const n = ex.param_count();
  const buf = ex.malloc(8 * n);
  ex.params_preset(buf);
  const values = Array.from(new Float64Array(ex.memory.buffer, buf, n));
  ex.free(buf);
  const table = [];
  for (let i = 0; i < n; i++)
    table.push({ name: cString(ex, ex.param_name(i)), preset: values[i] });
  return table;
}

// Steps the module's ring holds between two takes (steps.h): a frame at
// 100x covers about 1,700; a longer one is taken in several turns.
const STEP_RING = 8192;

export const PHASES = ['calm', 'burst', 'drain', 'outage', 'recovery'];
export const STATES = ['ACTIVE', 'INACTIVE', 'RECOVERING'];

// One run: params is { name: value } over the presets.
export class Engine {
  constructor(ex, params = {}) {
    this.ex = ex;
    this.table = paramTable(ex);
    const n = this.table.length;
    const buf = ex.malloc(8 * n);
    const view = new Float64Array(ex.memory.buffer, buf, n);
    this.table.forEach((p, i) => {
      view[i] = p.name in params ? Number(params[p.name]) : p.preset;
    });
    this.ptr = ex.engine_new(buf);
    // a refusal names the value at fault when the engine's bounds say it
    const bad = this.ptr ? -1 : ex.params_check(buf);
    const value = bad >= 0 ? new Float64Array(ex.memory.buffer, buf, n)[bad] : 0;
    ex.free(buf);
    if (bad >= 0)
      throw new Error(`${this.table[bad].name}=${value} is out of range`);
    if (!this.ptr) throw new Error('the engine refused these parameters');
    this.fields = [];
    for (let i = 0; i < ex.row_field_count(); i++)
      this.fields.push(cString(ex, ex.row_field_name(i)));
    this.rowBuf = ex.malloc(8 * this.fields.length);
    this.textBuf = ex.malloc(ex.row_text_size());
    this.liveBuf = ex.malloc(8 * 7);
    this.stepValues = ex.step_values();
    this.stepBuf = ex.malloc(4 * this.stepValues * STEP_RING);
    this.steps = ex.steps_new(this.ptr, STEP_RING);
    if (!this.steps) throw new Error('no memory for the steps');
    this.rows = 0;
  }

  // Runs to `until` ns of virtual time (a Number), a step (a millisecond)
  // at a time; the rows closed so far. onSteps, when given, gets every
  // step on the way, oldest first, in one or more Int32Arrays of [ms, lent,
  // idle, waiting] per step (copies, its own to keep).
  run(until, onSteps = null) {
    const at = BigInt(Math.floor(until));
    for (;;) {
      this.rows = this.ex.steps_run(this.steps, at);
      const n = this.ex.steps_take(this.steps, this.stepBuf, STEP_RING);
      if (n > 0 && onSteps)
        onSteps(new Int32Array(this.ex.memory.buffer, this.stepBuf,
          n * this.stepValues).slice());
      // a full ring stopped the run short of `until`: go on
      if (n < STEP_RING) return this.rows;
    }
  }

  now() {
    return this.ex.engine_now(this.ptr);
  }

  done() {
    return this.ex.engine_done(this.ptr) !== 0;
  }

  decisions() {
    return this.ex.engine_decisions(this.ptr);
  }

  // Row i as the native vsim prints it.
  rowText(i) {
    const n = this.ex.row_text(this.ptr, i, this.textBuf);
    if (n < 0) return null;
    return decoder.decode(
      new Uint8Array(this.ex.memory.buffer, this.textBuf, n).slice());
  }

  // Row i as { field: number }.
  row(i) {
    if (this.ex.row_values(this.ptr, i, this.rowBuf) !== 0) return null;
    const v = new Float64Array(this.ex.memory.buffer, this.rowBuf,
      this.fields.length);
    const out = {};
    this.fields.forEach((f, k) => { out[f] = v[k]; });
    return out;
  }

  // The pool now: lent, idle, waiting, breaker state, refused share (per
  // mille), phase, the breaker's retry_after (ns).
  live() {
    this.ex.engine_live(this.ptr, this.liveBuf);
    const v = new Float64Array(this.ex.memory.buffer, this.liveBuf, 7);
    return { lent: v[0], idle: v[1], waiting: v[2], breaker: v[3],
      refusal_pm: v[4], phase: v[5], retry_after_ns: v[6] };
  }

  free() {
    this.ex.free(this.rowBuf);
    this.ex.free(this.textBuf);
    this.ex.free(this.liveBuf);
    this.ex.free(this.stepBuf);
    this.ex.steps_free(this.steps);
    this.ex.engine_free(this.ptr);
    this.ptr = 0;
  }
}
