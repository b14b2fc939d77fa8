// kestrel dash — the live panel. Plain JavaScript over uPlot (bundled by
// `make` from npm into vendor/); the Go server provides the JSON API.
'use strict';

// The panel layout comes from the metric registry (GET /api/panels): the
// seed-000 default panel group in its order, then the vitals, data and probe
// panels. Each panel lists the metric names it draws (regexps over the names
// a run recorded); `split` makes small multiples (one chart per layer).
let GROUPS = [];
async function loadPanels() {
  const groups = await api('/api/panels');
  GROUPS = groups.map((g) => ({
    ...g,
    panels: g.panels.map((p) => ({
      ...p,
      match: (p.match || []).map((s) => new RegExp(s)),
      split: p.split ? new RegExp(p.split) : null,
      splitTitle: p.split_title || 'layer $1',
    })),
  }));
}

const COLORS = ['#2f6fde', '#d9480f', '#2b8a3e', '#862e9c', '#c92a2a', '#0b7285', '#e67700', '#5c7cfa', '#a61e4d', '#495057'];
const EVENT_STYLE = {
  alert: { color: '#c92a2a', width: 2 }, spike: { color: '#862e9c', width: 2 },
  skipped: { color: '#495057', width: 1, dash: [4, 3] }, clipped: { color: '#f08c00', width: 1, tick: true },
  lr_phase: { color: '#1c7ed6', width: 1, dash: [6, 3] }, batch_size: { color: '#0b7285', width: 1, dash: [2, 2] },
  data_stage: { color: '#2b8a3e', width: 2, dash: [6, 3] }, checkpoint: { color: '#adb5bd', width: 1, tick: true },
  warm_start: { color: '#000', width: 2 }, intervention: { color: '#e8590c', width: 3, dash: [10, 3, 2, 3] },
};
const SEV_COLOR = { SEV0: '#b3261e', SEV1: '#d9730d', SEV2: '#e0b000' };

const state = {
  runs: [], selected: [], x: 'step', logy: false, smooth: 'ema', smoothAmt: 0.6,
  data: {}, events: {}, info: {}, charts: [], streams: {}, tab: 'panels',
};

const $ = (s) => document.querySelector(s);
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v; else if (k.startsWith('on')) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
};

async function api(path) {
  const r = await fetch(path);
  if (!r.ok) {
    let msg = r.statusText;
    try { msg = (await r.json()).error || msg; } catch (_) { /* keep status */ }
    throw new Error(`${path}: ${msg}`);
  }
  return r.json();
}

function showMsg(text) { const m = $('#msg'); m.textContent = text; m.hidden = !text; }

// ---- state from/to the URL hash, so a view can be shared or reloaded ----
function readHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.get('runs')) state.selected = h.get('runs').split(',').filter(Boolean);
  if (h.get('x')) state.x = h.get('x');
  if (h.get('log')) state.logy = h.get('log') === '1';
  if (h.get('tab')) state.tab = h.get('tab');
}
function writeHash() {
  const h = new URLSearchParams({ runs: state.selected.join(','), x: state.x, log: state.logy ? '1' : '0', tab: state.tab });
  history.replaceState(null, '', '#' + h.toString());
}

// ---- smoothing ----
function smooth(y, kind, amt) {
  if (kind === 'none') return null;
  const out = new Array(y.length);
  if (kind === 'ema') {
    // Debiased EMA (as TensorBoard): s_t = a·s_{t-1} + (1−a)·y_t, divided by 1 − a^t.
    let s = 0, w = 0;
    for (let i = 0; i < y.length; i++) {
      const v = y[i];
      if (v == null || !isFinite(v)) { out[i] = null; continue; }
      s = amt * s + (1 - amt) * v; w = amt * w + (1 - amt);
      out[i] = s / w;
    }
    return out;
  }
  const k = Math.max(1, Math.round(1 + amt * 100)); // window 1..100
  let sum = 0; const q = [];
  for (let i = 0; i < y.length; i++) {
    const v = y[i];
    if (v == null || !isFinite(v)) { out[i] = null; continue; }
    q.push(v); sum += v;
    if (q.length > k) sum -= q.shift();
    out[i] = sum / q.length;
  }
  return out;
}

// ---- data loading ----
async function loadRuns() {
  state.runs = await api('/api/runs');
  if (!state.selected.length && state.runs.length) state.selected = [state.runs[0].name];
  state.selected = state.selected.filter((n) => state.runs.some((r) => r.name === n));
  const box = $('#runs');
  box.replaceChildren('runs:');
  for (const r of state.runs) {
    const cb = el('input', { type: 'checkbox', value: r.name });
    cb.checked = state.selected.includes(r.name);
    cb.addEventListener('change', () => {
      state.selected = [...box.querySelectorAll('input:checked')].map((i) => i.value);
      refreshAll();
    });
    box.append(el('label', { title: `${r.rows} rows, last step ${r.last_step}` }, cb, ' ' + r.name));
  }
  if (!state.runs.length) showMsg('No runs found. Start one with `kestrel train … --dash`, or pass run directories to `kestrel dash`.');
}

function panelNames(names, spec) {
  return names.filter((n) => spec.match.some((re) => re.test(n)));
}

async function loadRunData(run) {
  const width = Math.max(400, Math.floor(window.innerWidth / 2));
  const names = await api(`/api/names?run=${encodeURIComponent(run)}`);
  const wanted = new Set();
  for (const g of GROUPS) for (const p of g.panels) for (const n of panelNames(names, p)) wanted.add(n);
  const [metrics, events, info] = await Promise.all([
    api(`/api/metrics?run=${encodeURIComponent(run)}&x=${state.x}&max_points=${width}&names=${encodeURIComponent([...wanted].join(','))}`),
    api(`/api/events?run=${encodeURIComponent(run)}`),
    api(`/api/run?run=${encodeURIComponent(run)}`),
  ]);
  state.data[run] = metrics.series || {};
  state.events[run] = events || [];
  state.info[run] = info;
  if (info.bad_lines) showMsg(`${run}: ${info.bad_lines} metric lines could not be read (first: ${info.first_bad})`);
}

let refreshing = false, again = false;
async function refreshAll() {
  if (refreshing) { again = true; return; }
  refreshing = true;
  try {
    writeHash();
    showMsg('');
    await Promise.all(state.selected.map(loadRunData));
    render();
    connectStreams();
  } catch (e) {
    showMsg(String(e.message || e));
  } finally {
    refreshing = false;
    if (again) { again = false; setTimeout(refreshAll, 50); }
  }
}

// ---- live updates (server-sent events) ----
let liveTimer = null;
function connectStreams() {
  for (const [run, es] of Object.entries(state.streams)) {
    if (!state.selected.includes(run)) { es.close(); delete state.streams[run]; }
  }
  for (const run of state.selected) {
    if (state.streams[run]) continue;
    const es = new EventSource(`/api/stream?run=${encodeURIComponent(run)}`);
    let first = true;
    es.addEventListener('update', () => {
      $('#live').classList.add('on');
      if (first) { first = false; return; }
      clearTimeout(liveTimer);
      liveTimer = setTimeout(refreshAll, 500);
    });
    es.onerror = () => $('#live').classList.remove('on');
    state.streams[run] = es;
  }
}

// ---- charts ----
function xValue(ev) {
  if (state.x === 'tokens') return ev.tokens >= 0 ? ev.tokens : null;
  if (state.x === 'time') return ev.time >= 0 ? ev.time : null;
  return ev.step;
}

function eventsPlugin(runs) {
  const evs = () => runs.flatMap((r) => (state.events[r] || []).map((e) => ({ ...e, run: r })));
  return {
    hooks: {
      draw: [(u) => {
        const ctx = u.ctx; const { top, height, left, width } = u.bbox;
        ctx.save();
        for (const e of evs()) {
          const xv = xValue(e); if (xv == null) continue;
          const px = u.valToPos(xv, 'x', true);
          if (px < left || px > left + width) continue;
          const st = EVENT_STYLE[e.kind] || { color: '#868e96', width: 1 };
          ctx.strokeStyle = e.kind === 'alert' ? (SEV_COLOR[e.severity] || st.color) : st.color;
          ctx.lineWidth = st.width * devicePixelRatio;
          ctx.setLineDash((st.dash || []).map((d) => d * devicePixelRatio));
          ctx.beginPath();
          const y0 = st.tick ? top + height - 8 * devicePixelRatio : top;
          ctx.moveTo(px, y0); ctx.lineTo(px, top + height); ctx.stroke();
        }
        ctx.restore();
      }],
      ready: [(u) => {
        u.over.addEventListener('click', (m) => {
          const xv = u.posToVal(m.offsetX, 'x');
          const tol = Math.abs(u.posToVal(m.offsetX + 6, 'x') - xv);
          let best = null, bestD = Infinity;
          for (const e of evs()) {
            if (e.kind === 'clipped' || e.kind === 'checkpoint') continue;
            const ex = xValue(e); if (ex == null) continue;
            const d = Math.abs(ex - xv);
            if (d <= tol && d < bestD) { best = e; bestD = d; }
          }
          if (best) showDetail(best);
        });
      }],
    },
  };
}

// Wheel zooms around the cursor; shift-drag pans. Double-click resets.
function zoomPanPlugin() {
  return {
    hooks: {
      ready: [(u) => {
        const over = u.over;
        over.addEventListener('wheel', (e) => {
          e.preventDefault();
          const { min, max } = u.scales.x;
          const xv = u.posToVal(e.offsetX, 'x');
          const f = e.deltaY < 0 ? 0.8 : 1.25;
          u.setScale('x', { min: xv - (xv - min) * f, max: xv + (max - xv) * f });
        }, { passive: false });
        over.addEventListener('mousedown', (e) => {
          if (!e.shiftKey) return;
          e.stopPropagation(); e.preventDefault();
          const x0 = e.clientX; const { min, max } = u.scales.x;
          const per = (max - min) / u.bbox.width * devicePixelRatio;
          const move = (m) => { const dx = (m.clientX - x0) * per; u.setScale('x', { min: min - dx, max: max - dx }); };
          const up = () => { window.removeEventListener('mousemove', move); window.removeEventListener('mouseup', up); };
          window.addEventListener('mousemove', move); window.addEventListener('mouseup', up);
        }, true);
      }],
    },
  };
}

// Zoom and pan are shared by every chart. While charts are being built
// (their own auto-ranging) nothing is propagated; a reset (a chart back at
// its full range) resets every chart to its own full range.
let syncing = false;
const fullRange = (c) => { const x = c.data[0]; return x && x.length ? { min: x[0], max: x[x.length - 1] } : null; };
function syncScales(u) {
  if (syncing) return;
  syncing = true;
  const { min, max } = u.scales.x;
  const full = fullRange(u);
  const reset = full && min <= full.min && max >= full.max;
  for (const c of state.charts) {
    if (c === u || !c.scales.x) continue;
    const r = reset ? fullRange(c) : { min, max };
    if (r) c.setScale('x', r);
  }
  syncing = false;
}

function fmtX(v) {
  if (v == null) return '';
  if (state.x === 'time') {
    const s = Math.round(v); const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), ss = s % 60;
    return h ? `${h}h${String(m).padStart(2, '0')}m` : m ? `${m}m${String(ss).padStart(2, '0')}s` : `${ss}s`;
  }
  if (Math.abs(v) >= 1e9) return (v / 1e9).toFixed(2) + 'B';
  if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(2) + 'M';
  if (Math.abs(v) >= 1e4) return (v / 1e3).toFixed(1) + 'k';
  return String(Math.round(v * 100) / 100);
}

// buildChart makes one uPlot chart of the given (run, name) series.
function buildChart(container, title, hint, series, opts) {
  const tables = []; const meta = []; const bands = [];
  let allPos = true, any = false;
  // Per-layer/head panels: legend labels without the shared metric name
  // ("layer2/head3" rather than "max_attn_logit/layer2/head3").
  const names = [...new Set(series.map((s) => s.name))];
  let prefix = '';
  if (names.length > 1) {
    prefix = names.reduce((p, n) => { while (!n.startsWith(p)) p = p.slice(0, -1); return p; });
    prefix = prefix.slice(0, prefix.lastIndexOf('/') + 1);
  }
  series.forEach(({ run, name }, i) => {
    const env = state.data[run] && state.data[run][name];
    if (!env || !env.x || !env.x.length) return;
    any = true;
    const color = COLORS[(state.selected.indexOf(run) * 3 + i) % COLORS.length];
    const short = prefix && name.length > prefix.length ? name.slice(prefix.length) : name;
    const label = state.selected.length > 1 ? `${run}: ${short}` : short;
    const cols = [env.x, env.y];
    // Sparse series (evaluations, probes) are shown as they are: smoothing
    // a handful of points only delays them. Thresholds and the loss fit
    // with its projection are already smooth: drawn as they are, dashed.
    const asIs = /threshold|^loss_fit$|^loss_projection_final$/.test(name);
    const sm = asIs || env.n < 50 ? null : smooth(env.y, state.smooth, state.smoothAmt);
    const base = meta.length + 1;
    meta.push({ label, stroke: sm ? color + '55' : color, width: 1, run, name });
    if (env.downsampled) {
      cols.push(env.lo, env.hi);
      meta.push({ label: label + ' min', stroke: 'transparent', hideLegend: true });
      meta.push({ label: label + ' max', stroke: 'transparent', hideLegend: true });
      bands.push({ series: [base + 2, base + 1], fill: color + '30' });
    }
    if (sm) { cols.push(sm); meta.push({ label: label + ' (smoothed)', stroke: color, width: 2, run, name }); }
    if (asIs) { meta[base - 1].dash = [6, 4]; }
    for (const c of cols.slice(1)) for (const v of c) if (v != null && v <= 0) allPos = false;
    tables.push(cols);
  });
  const box = el('div', { class: 'panel', 'data-panel': opts.id || title });
  box.append(el('h3', {}, title));
  if (hint) box.append(el('p', { class: 'hint' }, hint));
  container.append(box);
  if (!any) {
    box.classList.add('nodata');
    box.append(el('div', { class: 'empty' }, 'not recorded in this run'));
    return null;
  }
  const data = tables.length === 1 ? tables[0] : uPlot.join(tables);
  const logy = state.logy && allPos;
  const thresholds = [];
  if (opts.threshold) {
    for (const run of state.selected) {
      const v = parseFloat((state.info[run] && state.info[run].config_flat || {})[opts.threshold]);
      if (v > 0) thresholds.push(v);
    }
  }
  const uopts = {
    width: Math.max(260, box.clientWidth - 16), height: opts.small ? 150 : 200,
    cursor: { sync: { key: 'kestrel' }, drag: { x: true, y: false } },
    scales: { x: { time: false }, y: { distr: logy ? 3 : 1 } },
    axes: [{ values: (u, vals) => vals.map(fmtX), size: 32 }, { size: 56 }],
    legend: { live: true },
    series: [{ label: state.x, value: (u, v) => fmtX(v) }, ...meta.map((m) => ({
      label: m.label, stroke: m.stroke, width: m.width || 1, dash: m.dash, spanGaps: true, points: { show: false },
    }))],
    bands,
    plugins: [eventsPlugin(state.selected), zoomPanPlugin(), {
      hooks: {
        setScale: [(u, key) => { if (key === 'x') syncScales(u); }],
        draw: [(u) => {
          if (!thresholds.length) return;
          const ctx = u.ctx; ctx.save(); ctx.strokeStyle = '#c92a2a'; ctx.setLineDash([6, 4]);
          for (const t of thresholds) {
            const py = u.valToPos(t, 'y', true);
            ctx.beginPath(); ctx.moveTo(u.bbox.left, py); ctx.lineTo(u.bbox.left + u.bbox.width, py); ctx.stroke();
          }
          ctx.restore();
        }],
      },
    }],
  };
  const u = new uPlot(uopts, data, box);
  const rows = u.root.querySelectorAll('.u-legend .u-series');
  meta.forEach((m, i) => { if (m.hideLegend && rows[i + 1]) rows[i + 1].style.display = 'none'; });
  box.dataset.points = String(data[0].length);
  return u;
}

function render() {
  for (const c of state.charts) c.destroy();
  state.charts = [];
  syncing = true; // charts range themselves while being built
  try { renderCharts(); } finally { syncing = false; }
  if (state.tab === 'run') renderRunPage();
}

function renderCharts() {
  const root = $('#panels');
  root.replaceChildren();
  if (typeof uPlot === 'undefined') {
    showMsg('Chart assets are missing from this build: run `make build` (it installs uPlot with npm and embeds it).');
    return;
  }
  for (const g of GROUPS) {
    const sec = el('section', { class: 'group' }, el('h2', {}, g.title));
    const grid = el('div', { class: g.small ? 'grid small' : 'grid' });
    sec.append(grid);
    root.append(sec);
    for (const p of g.panels) {
      const all = new Set();
      for (const run of state.selected) for (const n of panelNames(Object.keys(state.data[run] || {}), p)) all.add(n);
      const names = [...all].sort();
      if (p.split) {
        const parts = {};
        for (const n of names) { const m = n.match(p.split); if (m) (parts[m[1]] = parts[m[1]] || []).push(n); }
        const keys = Object.keys(parts).sort((a, b) => a - b);
        if (!keys.length) continue; // per-layer detail not recorded: the worst-case panel covers it
        for (const k of keys) {
          const series = state.selected.flatMap((run) => parts[k].map((name) => ({ run, name })));
          const c = buildChart(grid, `${p.title} · ${p.splitTitle.replace('$1', k)}`, '', series, { ...p, id: `${p.id}-${k}`, small: true });
          if (c) state.charts.push(c);
        }
        continue;
      }
      const series = state.selected.flatMap((run) => names.map((name) => ({ run, name })));
      const c = buildChart(grid, p.title, p.hint, series, { ...p, small: g.small });
      if (c) state.charts.push(c);
    }
  }
  root.append(eventsTable());
}

function eventsTable() {
  const sec = el('section', { class: 'group', id: 'eventlist' }, el('h2', {}, 'Events'));
  const tbl = el('table', { class: 'events' });
  tbl.append(el('tr', {}, el('th', {}, 'run'), el('th', {}, 'step'), el('th', {}, 'kind'), el('th', {}, 'what')));
  let n = 0;
  for (const run of state.selected) {
    for (const e of state.events[run] || []) {
      if (e.kind === 'clipped' && n > 200) continue;
      const kind = e.kind === 'alert' ? el('span', { class: 'sev-' + e.severity }, e.severity || 'alert') : e.kind;
      const tr = el('tr', { onclick: () => showDetail({ ...e, run }) }, el('td', {}, run), el('td', {}, String(e.step)), el('td', {}, kind), el('td', {}, e.title + (e.detail ? ' — ' + e.detail : '')));
      tbl.append(tr); n++;
    }
  }
  if (!n) tbl.append(el('tr', {}, el('td', { colspan: '4' }, 'no events yet')));
  sec.append(el('div', { class: 'events' }, tbl));
  return sec;
}

function showDetail(e) {
  const body = $('#detailBody');
  body.replaceChildren(
    el('h3', {}, `${e.kind === 'alert' ? (e.severity || '') + ' ' : ''}${e.title}`),
    el('p', {}, `run ${e.run} · step ${e.step}${e.tokens >= 0 ? ' · tokens ' + fmtX(e.tokens) : ''}`),
  );
  if (e.detail) body.append(el('p', {}, e.detail));
  if (e.runbook) body.append(el('h4', {}, 'Runbook'), el('pre', {}, e.runbook));
  if (e.evidence) body.append(el('h4', {}, 'Evidence'), el('p', {}, e.evidence));
  $('#detail').hidden = false;
}

// ---- run page ----
function renderRunPage() {
  const page = $('#runpage');
  page.replaceChildren();
  const runs = state.selected;
  if (!runs.length) { page.append(el('p', {}, 'Select a run.')); return; }
  const cmp = compareSection(runs, runs.length === 1 && !!((state.info[runs[0]] || {}).manifest || {}).parent); // compare.js
  if (cmp) page.append(cmp);
  if (runs.length > 1) page.append(configDiff(runs));
  for (const run of runs) {
    const info = state.info[run] || {};
    const sec = el('section', { class: 'group' }, el('h2', {}, `Run ${run}`));
    sec.append(el('p', {}, `${info.dir || ''} · ${info.rows || 0} metric lines${info.bad_lines ? ` · ${info.bad_lines} unreadable (${info.first_bad})` : ''}`));
    for (const p of info.problems || []) sec.append(el('p', { class: 'problem' }, `not read: ${p}`));
    const links = el('p', {}, 'files: ');
    for (const f of info.files || []) links.append(el('a', { href: `/files/${encodeURIComponent(run)}/${f}`, target: '_blank' }, f), ' ');
    if ((info.tensorboard || []).length) links.append(` · TensorBoard: tensorboard --logdir ${info.dir} (${info.tensorboard.length} event file(s))`);
    sec.append(links);
    sec.append(samplesSection(run)); // samples.js
    const alerts = el('table');
    alerts.append(el('tr', {}, el('th', {}, 'step'), el('th', {}, 'severity'), el('th', {}, 'rule'), el('th', {}, 'message')));
    for (const a of info.alerts || []) alerts.append(el('tr', { onclick: () => showDetail({ ...a, run }) }, el('td', {}, String(a.step)), el('td', {}, el('span', { class: 'sev-' + a.severity }, a.severity)), el('td', {}, a.title), el('td', {}, a.detail || '')));
    if (!(info.alerts || []).length) alerts.append(el('tr', {}, el('td', { colspan: '4' }, 'no alerts')));
    sec.append(el('h3', {}, 'Alerts'), alerts);
    if (info.data_report) sec.append(el('h3', {}, 'Data report'), el('pre', { class: 'config' }, JSON.stringify(info.data_report, null, 1)));
    if (info.manifest) sec.append(el('h3', {}, 'Manifest'), el('pre', { class: 'config' }, JSON.stringify(info.manifest, null, 1)));
    sec.append(el('h3', {}, 'Resolved config'), el('pre', { class: 'config' }, info.config || '(no config.toml)'));
    page.append(sec);
  }
}

function configDiff(runs) {
  const keys = new Set();
  for (const r of runs) for (const k of Object.keys((state.info[r] || {}).config_flat || {})) keys.add(k);
  const tbl = el('table', { id: 'configdiff' });
  tbl.append(el('tr', {}, el('th', {}, 'config'), ...runs.map((r) => el('th', {}, r))));
  const sorted = [...keys].sort();
  const differs = (k) => new Set(runs.map((r) => ((state.info[r] || {}).config_flat || {})[k])).size > 1;
  for (const k of [...sorted.filter(differs), ...sorted.filter((k) => !differs(k))]) {
    const d = differs(k);
    tbl.append(el('tr', {}, el('td', {}, k), ...runs.map((r) => el('td', { class: d ? 'diff' : '' }, String(((state.info[r] || {}).config_flat || {})[k] ?? '—')))));
  }
  return el('section', { class: 'group' }, el('h2', {}, 'Config differences (changed keys first)'), tbl);
}

// ---- controls ----
function setTab(tab) {
  state.tab = tab;
  $('#tabPanels').classList.toggle('active', tab === 'panels');
  $('#tabRun').classList.toggle('active', tab === 'run');
  $('#panels').hidden = tab !== 'panels';
  $('#runpage').hidden = tab !== 'run';
  writeHash();
  if (tab === 'run') renderRunPage(); else render();
}

function init() {
  readHash();
  for (const r of document.querySelectorAll('input[name=x]')) {
    r.checked = r.value === state.x;
    r.addEventListener('change', () => { state.x = r.value; refreshAll(); });
  }
  $('#logy').checked = state.logy;
  $('#logy').addEventListener('change', (e) => { state.logy = e.target.checked; writeHash(); render(); });
  $('#smooth').addEventListener('change', (e) => { state.smooth = e.target.value; render(); });
  $('#smoothAmt').addEventListener('input', (e) => { state.smoothAmt = parseFloat(e.target.value); $('#smoothVal').textContent = e.target.value; render(); });
  $('#tabPanels').addEventListener('click', () => setTab('panels'));
  $('#tabRun').addEventListener('click', () => setTab('run'));
  $('#detailClose').addEventListener('click', () => { $('#detail').hidden = true; });
  window.addEventListener('resize', () => { clearTimeout(window._rt); window._rt = setTimeout(render, 200); });
  Promise.all([loadPanels(), loadRuns()]).then(() => { setTab(state.tab); return refreshAll(); }).catch((e) => showMsg(String(e.message || e)));
}

init();
