// The tree over time, drawn as SVG: one lane per agent (in the tree's
// order), a bar per step from its start to its commit, the model's time
// and the tools' time told apart by colour and the rest of the step
// (loading, waiting for capacity, retries) left pale, a bar's height
// growing with its tokens; a parked agent (waiting for sub-agents,
// messages, its owner) is a dashed gap, and spawns, messages and reports
// are arrows between lanes. Under the drawing, each question an agent asked
// its owner is listed with its answer once there is one. It is drawn from what the page already reads:
// the tree, the events the page long-polls, and the steps of the tree
// without their messages (GET .../steps?messages=false&order=asc), read
// as they are committed. Names and everything else from the API become
// text nodes (textContent); the SVG is built with createElementNS.
import { api } from './api.js';
import { h, fill } from './dom.js';
import { count, fmtCost, fmtInt } from './format.js';

const svgNS = 'http://www.w3.org/2000/svg';
const laneH = 30;
const labelW = 170;
const sumW = 190;
const axisH = 22;
const colors = { model: '#1f6feb', tools: '#e36209', other: '#c9d1d9', park: '#9a6700', spawn: '#1a7f37', message: '#8250df', report: '#57606a' };

// s makes an SVG element with attributes (set with setAttribute) and
// children (strings become text nodes).
function s(tag, attrs, ...children) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

// timelineView adds the timeline panel after the tree panel of root and
// returns { update(tree), addEvents(evs) }.
export function timelineView(root, signal) {
  const box = h('div', { class: 'timeline-box', id: 'timeline-body' }, h('p', { class: 'muted' }, 'The timeline appears with the first step.'));
  const panel = h('section', { class: 'panel', id: 'timeline' }, h('h2', {}, 'Timeline ', legend()), box);
  const tree = root.querySelector('#tree');
  if (tree) tree.after(panel); else root.append(panel);
  const st = { tree: null, rootID: 0, steps: [], events: [], cursor: '', loading: null, again: false, drawn: '' };

  async function readSteps() {
    for (let pages = 0; pages < 50 && !signal.aborted; pages++) {
      const page = await api('/v1/gb/research/' + st.rootID + '/steps?messages=false&order=asc&limit=100' +
        (st.cursor ? '&cursor=' + encodeURIComponent(st.cursor) : ''), { signal });
      st.steps.push(...(page.steps || []));
      if (page.next_cursor) st.cursor = page.next_cursor;
      if (!page.has_more) break;
    }
  }
  function load() {
    if (st.loading) { st.again = true; return; }
    st.loading = (async () => {
      do {
        st.again = false;
        try { await readSteps(); } catch (e) { if (e.name === 'AbortError') return; }
        draw();
      } while (st.again && !signal.aborted);
      st.loading = null;
    })();
  }
  function draw() {
    if (!st.tree) return;
    const key = st.steps.length + '/' + st.events.length + '/' + st.tree.runs.map((r) => r.status).join();
    const live = st.tree.runs.some((r) => !r.ended_at);
    if (key === st.drawn && !live) return;
    st.drawn = key;
    const width = Math.max(600, Math.floor(box.clientWidth || 1200));
    fill(box, render(st.tree, st.steps, st.events, width), asks(st.events, new Map(st.tree.runs.map((r) => [r.id, r.name || 'research']))));
  }
  return {
    update(tree) {
      st.tree = tree;
      const r = tree.runs.find((x) => x.parent_id == null) || tree.runs[0];
      if (r && st.rootID !== r.id) { st.rootID = r.id; st.steps = []; st.cursor = ''; }
      if (st.rootID) load();
    },
    addEvents(evs) { st.events.push(...evs); },
  };
}

// legend names the marks of the timeline.
function legend() {
  const item = (color, text, dash, title) => h('span', { class: 'tl-key', title },
    s('svg', { width: 18, height: 10, 'aria-hidden': 'true' },
      dash ? s('line', { x1: 0, y1: 5, x2: 18, y2: 5, stroke: color, 'stroke-width': 2, 'stroke-dasharray': '3 2' })
        : s('rect', { x: 0, y: 1, width: 18, height: 8, fill: color })), ' ' + text);
  return h('span', { class: 'tl-legend muted' }, item(colors.model, 'model'), item(colors.tools, 'tools'),
    item(colors.other, 'other', false, 'the rest of a step: loading its run, waiting for rate-limit capacity, calls retried, its commit'),
    item(colors.park, 'parked', true, 'waiting for sub-agents, messages or its owner, with no step running'), item(colors.spawn, 'spawn'),
    item(colors.message, 'message'), item(colors.report, 'report'));
}

// order is the runs of a tree, each parent followed by its sub-agents.
function order(runs) {
  const kids = new Map();
  for (const r of runs) {
    const p = r.parent_id ?? 0;
    if (!kids.has(p)) kids.set(p, []);
    kids.get(p).push(r);
  }
  const ids = new Set(runs.map((r) => r.id));
  const out = [];
  const walk = (r) => { out.push(r); for (const k of kids.get(r.id) || []) walk(k); };
  for (const r of runs) if (r.parent_id == null || !ids.has(r.parent_id)) walk(r);
  return out;
}

const ms = (t) => (t ? new Date(t).getTime() : NaN);

// render draws the timeline of a tree.
function render(tree, steps, events, width) {
  const runs = order(tree.runs);
  const lane = new Map(runs.map((r, i) => [r.id, i]));
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const r of runs) {
    t0 = Math.min(t0, ms(r.created_at));
    t1 = Math.max(t1, ms(r.ended_at) || Date.now());
  }
  for (const st of steps) t1 = Math.max(t1, ms(st.committed_at));
  if (!isFinite(t0) || !isFinite(t1)) return h('p', { class: 'muted' }, 'Nothing to draw yet.');
  const span = Math.max(t1 - t0, 1000);
  const plotW = width - labelW - sumW;
  const x = (t) => labelW + Math.max(0, Math.min(1, (t - t0) / span)) * plotW;
  const y = (id) => axisH + lane.get(id) * laneH;
  const height = axisH + runs.length * laneH + 6;
  const svg = s('svg', { class: 'timeline', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
    'aria-label': 'Timeline of the tree: ' + count(runs.length, 'agent') + ', ' + count(steps.length, 'step') });
  svg.append(s('defs', {}, ['spawn', 'message', 'report'].map((k) => s('marker', { id: 'tl-arrow-' + k, viewBox: '0 0 8 8', refX: 7, refY: 4,
    markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, s('path', { d: 'M0,0 L8,4 L0,8 z', fill: colors[k] })))));
  svg.append(axis(t0, span, x, height));
  const maxTokens = Math.max(1, ...steps.map((st) => st.tokens.prompt + st.tokens.completion));
  const perRun = new Map();
  for (const r of runs) {
    const i = lane.get(r.id);
    const yy = y(r.id);
    const g = s('g', { class: 'tl-lane', 'data-run-id': r.id });
    if (i % 2) g.append(s('rect', { x: 0, y: yy, width, height: laneH, fill: '#f6f8fa' }));
    g.append(s('text', { x: 6 + Math.min(r.depth, 4) * 10, y: yy + laneH / 2 + 4, class: 'tl-name' }, r.name || 'research'));
    const end = ms(r.ended_at) || t1;
    g.append(s('line', { x1: x(ms(r.created_at)), x2: x(end), y1: yy + laneH / 2, y2: yy + laneH / 2, stroke: '#d0d7de', 'stroke-width': 1 }));
    svg.append(g);
    perRun.set(r.id, { g, steps: 0, tokens: 0, cost: 0, model: 0, tools: 0 });
  }
  for (const st of steps) {
    const p = perRun.get(st.run_id);
    if (!p) continue;
    p.steps++; p.tokens += st.tokens.prompt + st.tokens.completion; p.cost += Number(st.cost_usd) || 0;
    p.model += st.model_ms; p.tools += st.tool_ms;
    p.g.append(stepBar(st, x, y(st.run_id), maxTokens));
  }
  parks(events, perRun, x, y, t1);
  for (const r of runs) {
    const p = perRun.get(r.id);
    p.g.append(s('text', { x: width - sumW + 8, y: y(r.id) + laneH / 2 + 4, class: 'tl-sum' },
      count(p.steps, 'step') + ' · ' + fmtInt(p.tokens) + ' tok · ' + fmtCost(p.cost)));
  }
  svg.append(arrows(events, lane, x, y));
  return svg;
}

// axis is the time axis: a tick every round number of seconds.
function axis(t0, span, x, height) {
  const g = s('g', { class: 'tl-axis' });
  const steps = [0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600];
  const every = (steps.find((d) => (span / 1000) / d <= 10) || 7200) * 1000;
  for (let t = 0; t <= span; t += every) {
    const xx = x(t0 + t);
    g.append(s('line', { x1: xx, x2: xx, y1: axisH - 4, y2: height, stroke: '#eaeef2' }));
    g.append(s('text', { x: xx + 2, y: axisH - 8, class: 'tl-tick' }, label(t)));
  }
  return g;
}

function label(t) {
  const sec = t / 1000;
  if (sec < 60) return (Number.isInteger(sec) ? sec : sec.toFixed(1)) + 's';
  if (sec < 3600) return Math.floor(sec / 60) + 'm' + (sec % 60 ? Math.round(sec % 60) + 's' : '');
  return Math.floor(sec / 3600) + 'h' + (sec % 3600 ? Math.round((sec % 3600) / 60) + 'm' : '');
}

// stepBar is a step: its whole span pale, then its model time, then its
// tools' time, which end at its commit; its height grows with its tokens.
function stepBar(st, x, yy, maxTokens) {
  const end = ms(st.committed_at);
  const start = Math.min(ms(st.started_at) || end, end);
  const toolsFrom = end - (st.tool_ms || 0);
  const modelFrom = Math.max(start, toolsFrom - (st.model_ms || 0));
  const tokens = st.tokens.prompt + st.tokens.completion;
  const bh = 8 + Math.round(12 * Math.sqrt(tokens / maxTokens));
  const top = yy + (laneH - bh) / 2;
  const w = (a, b) => Math.max(x(b) - x(a), 0);
  const g = s('g', { class: 'tl-step', 'data-run-id': st.run_id, 'data-step': st.step });
  g.append(s('title', {}, st.agent + ' · step ' + st.step + ' · ' + (st.model || '') + '\nmodel ' + secs(st.model_ms) +
    ', tools ' + secs(st.tool_ms) + ', whole ' + secs(end - start) + '\n' + count(tokens, 'token') + ' (' +
    fmtInt(st.tokens.cached) + ' cached), ' + fmtCost(st.cost_usd) + (st.retries ? '\n' + count(st.retries, 'retry', 'retries') : '')));
  g.append(s('rect', { class: 'tl-other', x: x(start), y: top, width: Math.max(w(start, end), 2), height: bh, fill: colors.other }));
  g.append(s('rect', { class: 'tl-model', x: x(modelFrom), y: top, width: Math.max(w(modelFrom, toolsFrom), 1), height: bh, fill: colors.model }));
  if (st.tool_ms > 0) g.append(s('rect', { class: 'tl-tools', x: x(toolsFrom), y: top, width: Math.max(w(toolsFrom, end), 1), height: bh, fill: colors.tools }));
  return g;
}

function secs(n) { return ((Number(n) || 0) / 1000).toFixed(2) + ' s'; }

// parks draws the time each agent was parked (from waiting to resumed, or
// to the end) as a dashed line in its lane.
function parks(events, perRun, x, y, t1) {
  const open = new Map();
  const done = [];
  for (const ev of events) {
    if (!perRun.has(ev.run_id)) continue;
    if (['waiting', 'input_required', 'plan_proposed', 'waiting_provider'].includes(ev.kind)) open.set(ev.run_id, ev);
    else if (open.has(ev.run_id) && ['resumed', 'answered', 'plan_decided', 'provider_recovered', 'completed', 'failed', 'cancelled', 'timed_out'].includes(ev.kind)) {
      done.push([open.get(ev.run_id), ms(ev.at), ev]);
      open.delete(ev.run_id);
    }
  }
  for (const ev of open.values()) done.push([ev, t1, null]);
  for (const [ev, end, closed] of done) {
    const yy = y(ev.run_id) + laneH / 2;
    const d = ev.data || {};
    const why = ev.kind === 'waiting' ? (d.for === 'messages' ? 'waiting for messages' : 'waiting for ' + [].concat(d.names || []).join(', '))
      : ev.kind === 'input_required' ? asked(d, closed)
        : ev.kind === 'waiting_provider' ? 'waiting for its provider (' + [d.provider, d.model].filter(Boolean).join(' ') + ')'
          : 'waiting for its owner\'s decision on its plan';
    perRun.get(ev.run_id).g.append(s('line', { class: 'tl-park', x1: x(ms(ev.at)), x2: x(end), y1: yy, y2: yy,
      stroke: colors.park, 'stroke-width': 2, 'stroke-dasharray': '4 3' }, s('title', {}, why)));
  }
}

// asked tells a park for the owner's answer: the question the agent asked,
// and the answer once there is one (or that the deadline passed).
function asked(d, closed) {
  let text = 'asked its owner: ' + (d.question || '(no question recorded)');
  if (closed && closed.kind === 'answered') {
    const a = closed.data || {};
    text += a.by === 'owner' ? '\nanswered: ' + (a.answer || '') : '\nno answer by its deadline';
  } else if (!closed) text += '\nwaiting for the answer';
  return text;
}

// asks lists, under the drawing, each question an agent asked its owner
// and its answer (or that the deadline passed, or that it still waits),
// so that a parked run's timeline says what it waits for without a
// pointer over its park; null when no agent asked. names are the tree's
// agents' names by run id.
function asks(events, names) {
  const items = [];
  const open = new Map();
  for (const ev of events) {
    const d = ev.data || {};
    if (ev.kind === 'input_required') {
      const answer = h('div', { class: 'tl-answer muted' }, 'waiting for the answer');
      items.push(h('li', { 'data-run-id': ev.run_id, 'data-seq': ev.seq },
        h('strong', {}, names.get(ev.run_id) || '#' + ev.run_id), ' asked its owner: ', h('span', { class: 'tl-question' }, d.question || '(no question recorded)'),
        answer));
      open.set(ev.run_id, answer);
    } else if (ev.kind === 'answered' && open.has(ev.run_id)) {
      const answer = open.get(ev.run_id);
      answer.className = 'tl-answer';
      answer.textContent = d.by === 'owner' ? 'answered: ' + (d.answer || '') : 'no answer by its deadline';
      open.delete(ev.run_id);
    }
  }
  return items.length ? h('ul', { class: 'tl-asks', id: 'timeline-asks' }, items) : null;
}

// arrows draws spawns (parent to child), messages (sender to receiver)
// and reports (a sub-agent that ended, to its parent) between lanes.
function arrows(events, lane, x, y) {
  const g = s('g', { class: 'tl-arrows' });
  const mid = (id) => y(id) + laneH / 2;
  for (const ev of events) {
    let from; let to; let kind; let text;
    const d = ev.data || {};
    if (ev.kind === 'spawned' && ev.parent_id != null) {
      [from, to, kind, text] = [ev.parent_id, ev.run_id, 'spawn', 'spawned ' + (d.name || '')];
    } else if (ev.kind === 'message' && d.to_run != null) {
      [from, to, kind, text] = [ev.run_id, d.to_run, 'message', 'message to ' + (d.to || '')];
    } else if (ev.kind === 'message' && d.from === 'user') {
      continue;
    } else if (['completed', 'failed', 'cancelled', 'timed_out'].includes(ev.kind) && ev.parent_id != null) {
      [from, to, kind, text] = [ev.run_id, ev.parent_id, 'report', ev.kind];
    } else {
      continue;
    }
    if (!lane.has(from) || !lane.has(to) || from === to) continue;
    const xx = x(ms(ev.at));
    const down = mid(to) > mid(from);
    g.append(s('line', { class: 'tl-arrow tl-' + kind, 'data-kind': kind, x1: xx, x2: xx, y1: mid(from) + (down ? 5 : -5),
      y2: mid(to) + (down ? -6 : 6), stroke: colors[kind], 'stroke-width': 1.5, 'marker-end': 'url(#tl-arrow-' + kind + ')' },
    s('title', {}, text)));
  }
  return g;
}
