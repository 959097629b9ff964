// Two researches side by side (#/compare/A/B): their totals, citation
// counts, tools, sources, the root agents' steps and reports, with what
// differs marked: a total that differs and by how much (B minus A), a
// tool used a different number of times, the sources only one of them
// read, and the first step where the root agents did something else. It
// is read once from the API the run's page reads (the run, its steps and
// its tree's sources); everything shown is text (dom.js h), the reports
// go through the Markdown renderer.
import { api, APIError } from './api.js';
import { h, extLink } from './dom.js';
import { badge, count, ended, fmtCost, fmtInt, truncate } from './format.js';
import { renderMarkdown } from './markdown.js';

const sides = ['a', 'b'];
const maxStepPages = 10;

// compareView renders the comparison of runs a and b into root and
// returns the function that stops it.
export function compareView(root, a, b, app) {
  const ac = new AbortController();
  const signal = ac.signal;
  const status = h('p', { class: 'muted', id: 'compare-status' }, 'Loading #' + a + ' and #' + b + '…');
  const panel = h('section', { class: 'panel', id: 'compare' }, h('h1', {}, 'Compare #' + a + ' and #' + b), status);
  root.append(panel);
  Promise.all([load(a, signal), load(b, signal)]).then(([A, B]) => {
    if (signal.aborted) return;
    status.remove();
    const at = divergeAt(A, B);
    panel.append(heads(A, B), totals(A, B), divergence(A, B, at));
    root.append(tools(A, B), sources(A, B), steps(A, B, at), reports(A, B));
  }).catch((e) => {
    if (!app.failed(e)) return;
    status.className = 'note error';
    status.textContent = 'Could not load the runs: ' + (e instanceof APIError && e.status === 404 ? 'one of them does not exist, or was deleted.' : e.message);
  });
  return () => ac.abort();
}

// load reads what the comparison shows of run id: the run with its
// totals, the steps of its subtree (with their messages, for the tool
// calls) and the sources of its tree.
async function load(id, signal) {
  const run = await api('/v1/gb/research/' + id, { signal });
  const stepList = [];
  let cursor = '';
  for (let pages = 0; pages < maxStepPages; pages++) {
    const page = await api('/v1/gb/research/' + id + '/steps?order=asc&limit=100' +
      (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''), { signal });
    stepList.push(...(page.steps || []));
    cursor = page.next_cursor || '';
    if (!page.has_more) break;
  }
  const srcs = await api('/v1/gb/research/' + id + '/sources' + (run.parent_id == null ? '?tree=true' : ''), { signal })
    .catch((e) => { if (e instanceof APIError && e.status === 404) return { sources: [] }; throw e; });
  const read = new Map();
  for (const s of srcs.sources || []) {
    if (s.kind === 'result') continue; // shown by a search, not read
    const key = s.url || s.title;
    if (key && !read.has(key)) read.set(key, s);
  }
  const used = new Map();
  for (const st of stepList) for (const c of callsOf(st)) used.set(c.name, (used.get(c.name) || 0) + 1);
  return { id, run, steps: stepList, own: stepList.filter((st) => st.run_id === id), read, used };
}

// callsOf is the tool calls of a step, in order.
function callsOf(st) {
  return (st.messages || []).flatMap((m) => m.tool_calls || []);
}

// doing is what a step did: its tool calls with their arguments, or its
// answer; two steps that did the same have the same.
function doing(st) {
  const calls = callsOf(st);
  return calls.length ? calls.map((c) => c.name + ' ' + c.arguments).join('\n') : 'answer';
}

// heads are the two columns' titles: which run, its topic and status.
function heads(A, B) {
  return h('div', { class: 'compare-cols' }, [A, B].map((S, i) => h('div', { class: 'compare-head', id: 'compare-' + sides[i], 'data-run-id': S.id },
    h('h2', {}, h('span', { class: 'side' }, sides[i].toUpperCase()), ' ',
      h('a', { href: '#/runs/' + S.id, class: 'run-link' }, '#' + S.id + ' ' + (S.run.name || 'research')), ' ', badge(S.run.status)),
    h('p', { class: 'topic-full' }, S.run.topic),
    ended(S.run) ? null : h('p', { class: 'note' }, 'This research still works: the comparison is as of now.'))));
}

// signed writes a difference with its sign, by fmt: "+12", "−$0.0010".
function signed(d, fmt) {
  if (d === 0) return '';
  return (d > 0 ? '+' : '−') + fmt(Math.abs(d));
}

// totals is the table of the two runs' totals and citation counts, each
// row with B's difference from A, a row that differs marked.
function totals(A, B) {
  const cites = (S, k) => (S.run.citations ? Number(S.run.citations[k]) || 0 : null);
  const rows = [
    ['agents', 'Agents', (S) => S.run.tree.runs, fmtInt],
    ['steps', 'Steps', (S) => S.run.tree.steps, fmtInt],
    ['tokens', 'Tokens', (S) => S.run.tree.tokens, fmtInt],
    ['cost', 'Cost', (S) => Number(S.run.tree.cost_usd) || 0, fmtCost],
    ['sources', 'Sources read', (S) => S.read.size, fmtInt],
    ['tools', 'Tool calls', (S) => [...S.used.values()].reduce((x, y) => x + y, 0), fmtInt],
    ['claims', 'Claims checked', (S) => cites(S, 'claims'), fmtInt],
    ['supported', 'Supported claims', (S) => cites(S, 'supported'), fmtInt],
    ['unsupported', 'Unsupported claims', (S) => cites(S, 'unsupported'), fmtInt],
  ];
  const text = [
    ['model', 'Model', (S) => S.run.model],
    ['status', 'Status', (S) => S.run.status],
    ['citations', 'Citation check', (S) => S.run.citations_mode || 'off'],
  ];
  return h('table', { class: 'grid compare-table', id: 'compare-totals' },
    h('thead', {}, h('tr', {}, h('th', {}, ''), h('th', { class: 'num' }, 'A'), h('th', { class: 'num' }, 'B'), h('th', { class: 'num' }, 'B − A'))),
    h('tbody', {},
      text.map(([key, label, get]) => {
        const [x, y] = [get(A), get(B)];
        return h('tr', { 'data-metric': key, class: x !== y ? 'differs' : '' },
          h('th', {}, label), h('td', { class: 'a' }, x), h('td', { class: 'b' }, y), h('td', { class: 'delta' }, x !== y ? 'differs' : ''));
      }),
      rows.map(([key, label, get, fmt]) => {
        const [x, y] = [get(A), get(B)];
        const known = x !== null && y !== null;
        const d = known ? y - x : 0;
        return h('tr', { 'data-metric': key, class: known && Math.abs(d) > 1e-9 ? 'differs' : '' },
          h('th', {}, label), h('td', { class: 'num a' }, x === null ? 'not checked' : fmt(x)),
          h('td', { class: 'num b' }, y === null ? 'not checked' : fmt(y)), h('td', { class: 'num delta' }, known ? signed(d, fmt) : ''));
      })));
}

// divergeAt is the first step where the root agents of A and B did
// something else, or where one of them had stopped; 0 when none.
function divergeAt(A, B) {
  const n = Math.max(A.own.length, B.own.length);
  for (let i = 0; i < n; i++) {
    const [x, y] = [A.own[i], B.own[i]];
    if (!x || !y || doing(x) !== doing(y)) return i + 1;
  }
  return 0;
}

// divergence says where the root agents diverge, at step at, and what
// each did there.
function divergence(A, B, at) {
  const n = Math.max(A.own.length, B.own.length);
  const what = (st) => (st ? callsOf(st).map((c) => c.name + ' ' + truncate(c.arguments, 80)).join(', ') || 'answer' : 'no step');
  const text = at === 0
    ? 'Their root agents took the same ' + count(n, 'step') + '.'
    : 'Their root agents diverge at step ' + at + ': A → ' + what(A.own[at - 1]) + ', B → ' + what(B.own[at - 1]) + '.';
  return h('p', { class: at ? 'note diverge' : 'note', id: 'compare-diverge', 'data-step': at }, text);
}

// tools is what tools each tree called, how often; a tool called a
// different number of times is marked.
function tools(A, B) {
  const names = [...new Set([...A.used.keys(), ...B.used.keys()])].sort();
  return h('section', { class: 'panel', id: 'compare-tools' }, h('h2', {}, 'Tools used'),
    names.length ? h('table', { class: 'grid compact compare-table' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Tool'), h('th', { class: 'num' }, 'A'), h('th', { class: 'num' }, 'B'))),
      h('tbody', {}, names.map((t) => {
        const [x, y] = [A.used.get(t) || 0, B.used.get(t) || 0];
        return h('tr', { 'data-tool': t, class: x !== y ? 'differs' : '' },
          h('td', { class: 'kind' }, t), h('td', { class: 'num a' }, fmtInt(x)), h('td', { class: 'num b' }, fmtInt(y)));
      }))) : h('p', { class: 'muted' }, 'Neither called a tool.'));
}

// sources lists what each tree read, a source the other did not read
// marked as only in it.
function sources(A, B) {
  const both = [...A.read.keys()].filter((k) => B.read.has(k)).length;
  const col = (S, O, side) => h('div', { id: 'compare-sources-' + side },
    h('h3', {}, side.toUpperCase() + ' · ' + count(S.read.size, 'source')),
    S.read.size ? h('ul', { class: 'compare-sources' }, [...S.read].map(([k, s]) => {
      const only = !O.read.has(k);
      return h('li', { 'data-url': k, class: only ? 'only' : '' },
        only ? h('span', { class: 'only-tag' }, 'only in ' + side.toUpperCase()) : null, ' ',
        s.url ? extLink(s.url, s.title || s.url) : s.title, h('span', { class: 'muted' }, ' · ' + s.kind));
    })) : h('p', { class: 'muted' }, 'No source read.'));
  return h('section', { class: 'panel', id: 'compare-sources' },
    h('h2', {}, 'Sources read ', h('span', { class: 'muted', id: 'compare-sources-sum' },
      both + ' in both, ' + (A.read.size - both) + ' only in A, ' + (B.read.size - both) + ' only in B')),
    h('div', { class: 'compare-cols' }, col(A, B, 'a'), col(B, A, 'b')));
}

// steps shows the root agents' steps side by side, the step where they
// diverge marked in both.
function steps(A, B, at) {
  const col = (S, side) => h('ol', { class: 'compare-steps', id: 'compare-steps-' + side },
    S.own.map((st) => {
      const calls = callsOf(st);
      return h('li', { 'data-step': st.step, class: st.step === at ? 'diverge' : '' },
        h('strong', {}, 'Step ' + st.step), ' ',
        h('span', { class: 'step-calls' }, calls.length ? '→ ' + calls.map((c) => c.name).join(', ') : '→ answer'),
        h('span', { class: 'muted' }, ' · ' + count(st.tokens.prompt + st.tokens.completion, 'token') + ' · ' + fmtCost(st.cost_usd)),
        calls.map((c) => h('div', { class: 'muted compare-args' }, truncate(c.arguments, 160))));
    }));
  return h('section', { class: 'panel', id: 'compare-steps' }, h('h2', {}, 'Steps of the root agents'),
    h('div', { class: 'compare-cols' }, col(A, 'a'), col(B, 'b')));
}

// reports shows the two reports side by side.
function reports(A, B) {
  const col = (S, side) => h('article', { class: 'report', id: 'compare-report-' + side },
    S.run.report ? renderMarkdown(S.run.report) : h('p', { class: 'muted' }, ended(S.run) ? 'It wrote no report.' : 'No report yet.'));
  return h('section', { class: 'panel', id: 'compare-reports' }, h('h2', {}, 'Reports'),
    h('div', { class: 'compare-cols' }, col(A, 'a'), col(B, 'b')));
}
