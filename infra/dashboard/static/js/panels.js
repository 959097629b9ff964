// The panels of a run's page, each rebuilt from the API's answers with
// text nodes only; the report goes through the Markdown renderer.
import { api } from './api.js';
import { h, fill, extLink, classWord } from './dom.js';
import { badge, count, ended, fmtBytes, fmtCost, fmtDateTime, fmtEstimated, fmtInt, fmtTime, fmtTokenParts, truncate, usageCells } from './format.js';
import { renderMarkdown } from './markdown.js';

const heads = new WeakMap();

// renderHead shows the run: name, status, topic, model, usage, lineage,
// and a Cancel button while it works. The title row and its button are
// made once per run and then only updated when what they show changes, so
// a refresh never replaces the button under a pointer pressing it; the
// rest is rebuilt when the run's facts change.
export function renderHead(el, run, app) {
  let head = heads.get(el);
  if (!head || head.id !== run.id) {
    head = makeHead(el, run.id, app);
    heads.set(el, head);
  }
  const name = run.name || 'research';
  if (head.name.textContent !== name) head.name.textContent = name;
  const over = ended(run);
  if (head.cancel.classList.contains('hidden') !== over) head.cancel.classList.toggle('hidden', over);
  const facts = headFacts(run);
  const key = JSON.stringify([facts.map(([k, v]) => [k, v instanceof Node ? v.textContent : v]),
    run.parent_id, run.root_id, run.reason, run.topic, run.error]);
  if (head.key === key) return;
  head.key = key;
  const lineage = [];
  if (run.parent_id) {
    lineage.push('Sub-agent of ', h('a', { href: '#/runs/' + run.parent_id }, '#' + run.parent_id));
    if (run.root_id !== run.parent_id) lineage.push(' in the tree of ', h('a', { href: '#/runs/' + run.root_id }, '#' + run.root_id));
  }
  fill(head.body,
    lineage.length ? h('p', { class: 'lineage' }, lineage) : null,
    run.reason ? h('p', { class: 'reason' }, h('strong', {}, 'Reason: '), run.reason) : null,
    h('p', { class: 'topic-full', id: 'run-topic' }, run.topic),
    // Each label and its value in a div of their own: the grid places
    // the pairs, never a label apart from its value.
    h('dl', { class: 'facts' }, facts.map(([k, v]) => h('div', { class: 'fact' }, h('dt', {}, k), h('dd', { 'data-fact': k.toLowerCase() }, v)))),
    run.error ? h('p', { class: 'note error', id: 'run-error' }, run.error) : null);
}

// makeHead builds the parts of run id's head that stay: its title row, with
// the Cancel button (hidden until renderHead shows it), and the box the
// rest goes in.
function makeHead(el, id, app) {
  const name = h('span', { id: 'run-name' });
  const cancel = h('button', { type: 'button', class: 'danger hidden', id: 'cancel' }, 'Cancel');
  cancel.addEventListener('click', async () => {
    if (!window.confirm('Cancel run #' + id + ' and its sub-agents?')) return;
    cancel.disabled = true;
    try {
      await api('/v1/gb/research/' + id + '/cancel', { method: 'POST' });
    } catch (e) {
      app.failed(e);
      cancel.disabled = false;
    }
  });
  const body = h('div', { class: 'head-body' });
  el.replaceChildren(
    h('div', { class: 'title-row' },
      h('h1', { id: 'run-title' }, h('span', { class: 'muted' }, '#' + id + ' '), name),
      h('div', { class: 'actions' }, cancel)),
    body);
  return { id, name, cancel, body, key: '' };
}

// headFacts are the label and value of each fact of the run's head.
function headFacts(run) {
  return [
    ['Status', badge(run.status)],
    ['State', run.state],
    run.provider_wait && run.state === 'waiting_provider' ? ['Provider', providerFact(run.provider_wait)] : null,
    ['Steps', run.steps + '/' + run.max_steps],
    ['Tokens', fmtInt(run.tokens)],
    ['Cached', fmtInt(run.cached_tokens)],
    Number(run.reasoning_tokens) > 0 ? ['Reasoning', fmtInt(run.reasoning_tokens)] : null,
    ['Cost', fmtCost(run.cost_usd)],
    [run.parent_id ? 'Subtree' : 'Tree', run.tree ? treeFact(run.tree) : ''],
    ['Model', run.model],
    run.forked_from ? ['Forked from', h('a', { href: '#/runs/' + run.forked_from }, '#' + run.forked_from + ' at step ' + run.fork_step)] : null,
    run.version ? ['Version', versionFact(run.version)] : null,
    ['Dataset', run.dataset],
    ['Created', fmtDateTime(run.created_at)],
    ['Elapsed', run.elapsed || ''],
  ].filter(Boolean);
}

// versionFact is the version a run's steps are made with: the bundle of
// prompts, types, tool schemas, profiles and limits it is pinned to, the
// gb version that stored it, and the gb version of its last step.
function versionFact(v) {
  if (!v.pinned) return 'not pinned yet';
  return 'bundle ' + v.pinned + ' (gb ' + v.bundle_version + ')' + (v.last_step ? '; last step gb ' + v.last_step : '');
}

// providerFact says what a run waiting for its provider waits for: the
// provider and model, since when, its tries, the last error and the next try.
function providerFact(w) {
  return w.provider + ' ' + w.model + ' down since ' + fmtTime(w.since) + ' (' + count(w.tries, 'try', 'tries') + '): ' +
    w.last_error + '; next try ' + fmtTime(w.next_try);
}

// treeFact sums up the totals of a run's subtree: agents, tokens with
// their cached and reasoning parts, and the calls settled at an estimate.
function treeFact(t) {
  const est = fmtEstimated(t.estimated_calls);
  return count(t.runs, 'agent') + ', ' + t.working + ' working, ' + count(t.tokens, 'token') + fmtTokenParts(t) +
    (est ? '; ' + est : '');
}

// renderTree shows the runs of a tree nested under their parents, the
// current one marked, and the tree's totals.
export function renderTree(el, tree, currentID) {
  const kids = new Map();
  for (const r of tree.runs) {
    const p = r.parent_id ?? 0;
    if (!kids.has(p)) kids.set(p, []);
    kids.get(p).push(r);
  }
  const ids = new Set(tree.runs.map((r) => r.id));
  const order = [];
  const walk = (r) => { order.push(r); for (const k of kids.get(r.id) || []) walk(k); };
  for (const r of tree.runs) if (r.parent_id == null || !ids.has(r.parent_id)) walk(r);
  const rows = order.map((r) => h('tr', {
    'data-run-id': r.id, 'data-status': r.status, 'data-depth': r.depth,
    class: r.id === currentID ? 'current' : '',
  },
  h('td', { class: 'name depth-' + Math.min(r.depth, 4) },
    r.depth > 0 ? h('span', { class: 'branch' }, '└ ') : null,
    h('a', { href: '#/runs/' + r.id, class: 'run-link' }, r.name || 'research'), h('span', { class: 'muted' }, ' #' + r.id)),
  h('td', { class: 'reason-cell', title: r.reason }, truncate(r.reason, 160)),
  h('td', {}, badge(r.status)),
  h('td', {}, r.state),
  h('td', { class: 'num' }, r.steps + '/' + r.max_steps),
  usageCells(r),
  h('td', { class: 'num' }, fmtCost(r.cost_usd)),
  h('td', { title: fmtDateTime(r.updated_at) }, fmtTime(r.updated_at))));
  const t = tree.totals || {};
  const est = fmtEstimated(t.estimated_calls);
  // In a box of its own that scrolls sideways, so that a narrow screen
  // scrolls the table instead of cutting it off.
  el.replaceChildren(h('div', { class: 'table-scroll', id: 'tree-scroll' }, h('table', { class: 'grid', id: 'tree-table' },
    h('thead', {}, h('tr', {}, ['Agent', 'Reason', 'Status', 'State', 'Steps', 'Tokens', 'Cached', 'Cost', 'Updated'].map((c) => h('th', {}, c)))),
    h('tbody', {}, rows),
    h('tfoot', {}, h('tr', {},
      h('td', {}, count(t.runs, 'agent')), h('td', {}, t.working ? t.working + ' working' : 'all ended'), h('td', {}), h('td', {}),
      h('td', { class: 'num' }, String(t.steps)), usageCells(t),
      h('td', { class: 'num' }, fmtCost(t.cost_usd)), h('td', { class: 'estimated' }, est))))));
}

const shownReports = new WeakMap();

// renderReport shows the run's report, rendered from Markdown; an unchanged
// report is left as it is, so a reader's selection survives a refresh.
export function renderReport(el, run) {
  const key = run.status + '\n' + run.report;
  if (shownReports.get(el) === key) return;
  shownReports.set(el, key);
  if (run.report) {
    el.replaceChildren(renderMarkdown(run.report));
  } else {
    el.replaceChildren(h('p', { class: 'muted' }, ended(run) ? 'This agent wrote no report.' : 'The report appears when this agent finishes.'));
  }
}

// eventRow is one line of the timeline: the event's number in its tree
// (as gb research events prints it; its seq, the API's cursor, is the
// cell's title), time, agent, kind, detail.
export function eventRow(ev, names) {
  return h('tr', { 'data-seq': ev.seq, 'data-n': ev.n, 'data-kind': ev.kind },
    h('td', { class: 'num muted', title: 'seq ' + ev.seq }, String(ev.n ?? '')),
    h('td', { title: fmtDateTime(ev.at) }, fmtTime(ev.at)),
    h('td', { class: 'agent' }, h('a', { href: '#/runs/' + ev.run_id }, names.get(ev.run_id) || '#' + ev.run_id)),
    h('td', {}, h('span', { class: 'kind k-' + classWord(ev.kind) }, ev.kind)),
    h('td', { class: 'detail' }, truncate(detail(ev), 240)));
}

function detail(ev) {
  const d = ev.data || {};
  const list = (v) => (Array.isArray(v) ? v.join(', ') : String(v ?? ''));
  switch (ev.kind) {
    case 'queued': return d.topic || '';
    case 'spawned': return (d.name || '') + (d.reason ? ': ' + d.reason : '');
    case 'step': return 'step ' + d.step + (d.tools && d.tools.length ? ' → ' + list(d.tools) : ' → answer') +
      (d.failed && d.failed.length ? ' (failed: ' + list(d.failed) + ')' : '') + ' · ' + count(d.tokens, 'token');
    // Recorded before a step's tools were listed in its own event.
    case 'tool': return 'step ' + d.step + ': ' + d.tool + (d.error ? ' (error)' : '');
    case 'message': return (d.from ? d.from + ' ' : '') + '→ ' + (d.to || '');
    case 'waiting': return d.for === 'messages' ? 'for messages until ' + fmtTime(d.until) : 'for ' + list(d.names);
    case 'resumed': return d.by ? 'by ' + d.by : '';
    case 'input_required': return (d.question || '') + (d.deadline ? ' (answer by ' + fmtDateTime(d.deadline) + ')' : '');
    case 'plan_proposed': return list(d.subagents) + (d.deadline ? ' (decide by ' + fmtDateTime(d.deadline) + ')' : '');
    case 'plan_decided': return d.by === 'owner' ? (d.decision || '') + ' by its owner' : 'no decision by the deadline';
    case 'waiting_provider': return 'for ' + [d.provider, d.model].filter(Boolean).join(' ') + ', down: ' + (d.error || '') +
      (d.next_try ? ' (next try ' + fmtTime(d.next_try) + ')' : '');
    case 'provider_recovered': return [d.provider, d.model].filter(Boolean).join(' ') + ' answered again after ' +
      (Number(d.waited_seconds) || 0).toFixed(0) + ' s (' + count(d.tries, 'try', 'tries') + ')';
    case 'answered': return d.by === 'owner' ? 'by its owner' + (d.answer ? ': ' + d.answer : '') : 'no answer by the deadline';
    case 'completed': return d.steps !== undefined ? count(d.steps, 'step') : '';
    case 'failed': case 'cancelled': case 'budget_exhausted': return d.error || '';
    case 'repaired': return [d.action, d.why].filter(Boolean).join(': ');
    case 'version': return 'step ' + d.step + ' moved to this deploy\'s bundle ' + String(d.to || '').slice(0, 12) +
      ' from ' + String(d.from || '').slice(0, 12) + ' (GB_PIN=latest)';
    default: return JSON.stringify(d);
  }
}

// renderMessages shows the transcript of messages between the agents.
export function renderMessages(el, msgs) {
  if (!msgs.length) {
    el.replaceChildren(h('p', { class: 'muted' }, 'No messages yet.'));
    return;
  }
  el.replaceChildren(h('ol', { class: 'messages' }, msgs.map((m) => h('li', { 'data-message-id': m.id },
    h('div', { class: 'msg-head' },
      h('strong', {}, m.from), ' → ', h('strong', {}, m.to),
      h('span', { class: 'muted' }, ' · ' + fmtTime(m.sent_at) + (m.read_at ? ' · read ' + fmtTime(m.read_at) : ' · unread'))),
    h('div', { class: 'msg-text' }, m.text)))));
}

// renderSources shows what the agents fetched, read and were shown: a
// page's HTTP status (with its error, or "cached" when an earlier fetch of
// the tree served it) and size; a document read from the knowledge base
// and its size in characters; a search result has neither.
export function renderSources(el, sources, names) {
  if (!sources.length) {
    el.replaceChildren(h('p', { class: 'muted' }, 'No sources yet.'));
    return;
  }
  el.replaceChildren(h('table', { class: 'grid compact', id: 'sources-table' },
    h('thead', {}, h('tr', {}, ['Agent', 'Step', 'Kind', 'Source', 'Status', 'Size', 'At'].map((c) => h('th', {}, c)))),
    h('tbody', {}, sources.map((s) => h('tr', { 'data-kind': s.kind },
      h('td', {}, names.get(s.run_id) || '#' + s.run_id),
      h('td', { class: 'num' }, String(s.step ?? '')),
      h('td', {}, s.kind),
      h('td', { class: 'source' }, extLink(s.url, s.title || s.url), s.title && s.url ? h('div', { class: 'muted url' }, truncate(s.url, 100)) : null),
      h('td', { class: 'status', title: s.error || s.content_type || null }, sourceStatus(s)),
      h('td', { class: 'num size' }, sourceSize(s)),
      h('td', { title: fmtDateTime(s.at) }, fmtTime(s.at)))))));
}

function sourceStatus(s) {
  if (s.kind !== 'fetch') return '';
  const parts = [s.status ? String(s.status) : 'no answer'];
  if (s.cached) parts.push('cached');
  if (s.error) parts.push(truncate(s.error, 60));
  return parts.join(' · ');
}

function sourceSize(s) {
  if (s.kind === 'fetch') return s.status ? fmtBytes(s.bytes) : '';
  if (!Number(s.bytes)) return '';
  return s.kind === 'kb' ? fmtInt(s.bytes) + ' chars' : fmtBytes(s.bytes);
}
