// The controller's live dashboard (served at /dashboard, embedded in the controller binary):
// polls /dashboard/api/state?since=MS every second, keeps the last ten minutes of samples and
// draws them with uPlot (vendored at build time); tables for functions, GPUs, instances and the
// event log. In an offline report (/dashboard/report) the data is inlined as
// window.SLUICE_DASHBOARD_DATA and nothing is polled. Exposes window.sluiceDashboard for tests.
(function () {
  'use strict';

  const WINDOW_MS = 10 * 60 * 1000;
  const MAX_EVENTS = 400;
  const POLL_MS = 1000;
  const STATE_LEVEL = { NONE: 0, RECOVERY: 1, CONTENTION: 2, EMERGENCY: 3 };
  const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b',
    '#e377c2', '#7f7f7f', '#bcbd22'];
  const report = window.SLUICE_DASHBOARD_DATA || null;
  const hasCharts = typeof window.uPlot === 'function';

  const model = { samples: [], events: [], latest: null, since: 0, polls: 0, nowMs: 0 };
  const plots = {};  // element id -> { key, plot }

  function $(id) { return document.getElementById(id); }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function fmt(x, digits) {
    if (x === null || x === undefined || Number.isNaN(x)) return '–';
    return Number(x).toFixed(digits);
  }

  function clock(ms) {
    const d = new Date(ms);
    return d.toLocaleTimeString([], { hour12: false });
  }

  function merge(data) {
    for (const s of data.samples) {
      if (s.t > model.since) model.samples.push(s);
    }
    if (model.samples.length) {
      const last = model.samples[model.samples.length - 1].t;
      model.since = Math.max(model.since, last);
      const cut = last - WINDOW_MS;
      let drop = 0;
      while (drop < model.samples.length && model.samples[drop].t < cut) drop++;
      if (drop) model.samples.splice(0, drop);
    }
    const seen = new Set(model.events.map((e) => e.seq));
    for (const e of data.events) if (!seen.has(e.seq)) model.events.push(e);
    if (model.events.length > MAX_EVENTS) model.events.splice(0, model.events.length - MAX_EVENTS);
    if (data.latest) model.latest = data.latest;
    model.nowMs = data.now_ms;
    model.polls++;
  }

  function fillBody(table, rows) {
    const body = $(table).tBodies[0];
    body.replaceChildren(...rows);
  }

  function row(cells, attrs) {
    const tr = el('tr');
    for (const c of cells) tr.appendChild(c instanceof Node ? c : el('td', c));
    for (const [k, v] of Object.entries(attrs || {})) tr.setAttribute(k, v);
    return tr;
  }

  function num(x, digits, bad) { return el('td', fmt(x, digits), bad ? 'num bad' : 'num'); }

  function renderFunctions(latest) {
    fillBody('functions', latest.functions.map((f) => {
      const late = f.slo_ms !== null && f.p99_ms > f.slo_ms;
      return row([f.name, f.kind, f.policy,
        el('td', f.state + (f.no_room ? ' (no GPU has room)' : ''), f.no_room ? 'bad' : ''),
        el('td', f.ready + ' / ' + f.starting + ' / ' + f.desired, 'num'),
        num(f.rps, 1), num(f.p50_ms, 1), num(f.p95_ms, 1, late), num(f.p99_ms, 1, late),
        num(f.slo_ms, 0), num(100 * f.svr, 1, f.svr > 0), num(f.cold_starts, 0)],
      { 'data-function': f.name });
    }));
  }

  function renderGpus(latest) {
    fillBody('gpus', latest.gpus.map((g) => {
      const on = latest.instances.filter((i) => i.gpu === g.uuid)
        .map((i) => i.function + '#' + i.id + ' (' + fmt(i.sm_share, 2) + ')').join(', ');
      return row([g.node, g.index + ' ' + g.uuid, g.name,
        el('td', g.share_state, 'state-' + g.share_state), on || '–']);
    }));
  }

  function renderInstances(latest) {
    fillBody('instances', latest.instances.map((i) => row([
      el('td', i.id, 'num'), i.function, i.node + ' / ' + i.gpu, i.state,
      '<' + fmt(i.request, 2) + ', ' + fmt(i.limit, 2) + ', q ' + fmt(i.time_quota, 2) + '>',
      num(i.sm_share, 2), num(i.in_flight, 0), num(i.restarts, 0)])));
  }

  function renderEvents() {
    const rows = model.events.slice().reverse().map((e) => row([
      clock(e.t), e.kind, e.function || '–', el('td', e.detail, 'detail')],
    { 'data-kind': e.kind }));
    fillBody('events', rows);
  }

  // The union of keys over samples of sample[field], in first-seen order.
  function keysOf(field) {
    const keys = [];
    const seen = new Set();
    for (const s of model.samples) {
      for (const k of Object.keys(s[field])) if (!seen.has(k)) { seen.add(k); keys.push(k); }
    }
    return keys;
  }

  // Series: [{ label, value(sample) -> number|null, dash?, width?, stepped? }].
  function chart(id, series, yLabel, opts) {
    const node = $(id);
    const xs = model.samples.map((s) => s.t / 1000);
    const data = [xs].concat(series.map((sr) => model.samples.map((s) => {
      const v = sr.value(s);
      return v === undefined || v === null || Number.isNaN(v) ? null : v;
    })));
    const key = JSON.stringify(series.map((s) => s.label)) + node.clientWidth;
    const held = plots[id];
    if (held && held.key === key) {
      held.plot.setData(data);
      return;
    }
    if (held) held.plot.destroy();
    const stepped = window.uPlot.paths && window.uPlot.paths.stepped;
    const o = {
      width: Math.max(300, node.clientWidth - 4),
      height: 200,
      cursor: { sync: { key: 'sluice' } },
      legend: { live: true },
      scales: Object.assign({ x: { time: true } }, (opts && opts.scales) || {}),
      axes: [{}, { label: yLabel, size: 56 }],
      series: [{}].concat(series.map((s, k) => ({
        label: s.label,
        stroke: s.color || PALETTE[k % PALETTE.length],
        width: s.width || 1.5,
        dash: s.dash,
        spanGaps: false,
        paths: s.stepped && stepped ? stepped({ align: 1 }) : undefined,
      }))),
    };
    plots[id] = { key, plot: new window.uPlot(o, data, node) };
  }

  function renderCharts() {
    const fns = keysOf('functions');
    const color = {};
    fns.forEach((f, k) => { color[f] = PALETTE[k % PALETTE.length]; });
    const fv = (f, field, scale) => (s) => (s.functions[f] ? s.functions[f][field] * (scale || 1)
      : null);
    chart('chart-rps', fns.map((f) => ({ label: f, color: color[f], value: fv(f, 'rps') })),
      'req/s');
    const lat = [];
    const slo = {};
    for (const f of (model.latest ? model.latest.functions : [])) slo[f.name] = f.slo_ms;
    for (const f of fns) {
      lat.push({ label: f + ' p50', color: color[f], width: 1, dash: [2, 3], value: fv(f, 'p50_ms') });
      lat.push({ label: f + ' p95', color: color[f], width: 1.5, value: fv(f, 'p95_ms') });
      lat.push({ label: f + ' p99', color: color[f], width: 2.5, value: fv(f, 'p99_ms') });
      if (slo[f]) lat.push({ label: f + ' SLO', color: '#555', dash: [8, 4], value: () => slo[f] });
    }
    chart('chart-latency', lat, 'ms');
    chart('chart-svr', fns.map((f) => ({ label: f, color: color[f], value: fv(f, 'svr', 100) })),
      '%');
    const inst = [];
    for (const f of fns) {
      inst.push({ label: f + ' ready', color: color[f], stepped: true, value: fv(f, 'ready') });
      inst.push({ label: f + ' desired', color: color[f], dash: [6, 4], stepped: true,
        value: fv(f, 'desired') });
    }
    chart('chart-instances', inst, 'instances');
    const ids = keysOf('instances');
    chart('chart-share', ids.map((id) => ({
      label: (lastFunctionOf(id) || '?') + '#' + id,
      value: (s) => (s.instances[id] ? s.instances[id].sm_share : null),
    })), 'share', { scales: { y: { range: [0, 1] } } });
    const gpus = keysOf('gpus');
    chart('chart-state', gpus.map((g) => ({
      label: gpuLabel(g), stepped: true,
      value: (s) => (s.gpus[g] in STATE_LEVEL ? STATE_LEVEL[s.gpus[g]] : null),
    })), 'state', { scales: { y: { range: [0, 3] } } });
  }

  function lastFunctionOf(id) {
    for (let k = model.samples.length - 1; k >= 0; k--) {
      const i = model.samples[k].instances[id];
      if (i) return i.function;
    }
    return null;
  }

  function gpuLabel(uuid) {
    const g = model.latest && model.latest.gpus.find((x) => x.uuid === uuid);
    return g ? g.node + '/' + g.index : uuid;
  }

  function setStatus(text, error) {
    const s = $('status');
    s.textContent = text;
    s.className = error ? 'status error' : 'status';
  }

  function render(data) {
    if (data.charts === false || !hasCharts) {
      const n = $('notice');
      n.hidden = false;
      n.textContent = 'Charts are unavailable: this build could not vendor uPlot (npm ci failed ' +
        'at build time). Tables still update.';
    }
    if (model.latest) {
      renderFunctions(model.latest);
      renderGpus(model.latest);
      renderInstances(model.latest);
    }
    renderEvents();
    if (hasCharts && data.charts !== false) renderCharts();
  }

  async function poll() {
    try {
      const r = await fetch('/dashboard/api/state?since=' + model.since, { cache: 'no-store' });
      if (!r.ok) throw new Error('HTTP ' + r.status);
      const data = await r.json();
      merge(data);
      render(data);
      setStatus('live · updated ' + clock(data.now_ms) + ' · ' + model.samples.length +
        ' samples');
    } catch (e) {
      setStatus('controller unreachable (' + e.message + '); retrying', true);
    } finally {
      setTimeout(poll, POLL_MS);
    }
  }

  window.sluiceDashboard = {
    model,
    // The data arrays of chart `id` (x first), or null before it is drawn.
    chartData: (id) => (plots[id] ? plots[id].plot.data : null),
    chartLabels: (id) => (plots[id] ? plots[id].plot.series.slice(1).map((s) => s.label) : null),
  };

  if (report) {
    merge(report);
    render(report);
    document.title = 'Sluice dashboard report';
    setStatus('report · saved ' + new Date(report.now_ms).toLocaleString() + ' · ' +
      model.samples.length + ' samples (offline)');
  } else {
    poll();
  }
}());
