// The steps of the agent a run's page shows, oldest first, from
// GET /v1/gb/research/{id}/steps?run={id}: each a <details> whose summary
// says what the step took (model, tokens, cost, model and tool time,
// retries, compaction) and whose body shows the messages it added: the
// model's reply, each tool call with its arguments and each tool's result.
// All of it is model or page output, shown as text nodes only (dom.js h);
// a text the API cut has a button that reads the step whole. Under it, a
// "Fork from here" form (fork.js) starts a new research from that step.
// Steps are appended as they are committed, so an open step stays open and
// a fork form keeps what is typed in it.
import { api } from './api.js';
import { h, fill } from './dom.js';
import { count, fmtCost, fmtDateTime, fmtInt, fmtTime } from './format.js';
import { forkControl } from './fork.js';

const pageSize = 50;

// stepsView adds the steps panel of run id to root and returns
// { refresh(rootID) }, which reads the steps committed since the last read;
// rootID is the id of the run's tree's root, which forks are asked of.
export function stepsView(root, id, signal, app) {
  const list = h('div', { id: 'steps-body' }, h('p', { class: 'muted', id: 'steps-empty' }, 'No steps yet.'));
  const counter = h('span', { class: 'muted', id: 'step-count' });
  root.append(h('section', { class: 'panel', id: 'steps' }, h('h2', {}, 'Steps ', counter), list));
  let cursor = '';
  let rootID = id;
  const rootOf = () => rootID;
  let shown = 0;
  let loading = null;
  let again = false;

  async function readNew() {
    for (let pages = 0; pages < 20 && !signal.aborted; pages++) {
      const page = await api('/v1/gb/research/' + id + '/steps?run=' + id + '&order=asc&limit=' + pageSize +
        (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''), { signal });
      for (const s of page.steps || []) {
        if (shown === 0) list.replaceChildren();
        list.append(stepElement(s, id, signal, rootOf, app));
        shown++;
      }
      if (page.next_cursor) cursor = page.next_cursor;
      if (!page.has_more) break;
    }
    counter.textContent = count(shown, 'step');
  }

  // refresh reads what is new; a refresh asked while one runs runs after it.
  function refresh(root) {
    if (root) rootID = root;
    if (loading) { again = true; return loading; }
    loading = (async () => {
      do {
        again = false;
        try {
          await readNew();
        } catch (e) {
          if (e.name === 'AbortError') return;
          counter.textContent = 'could not load the steps: ' + e.message;
        }
      } while (again && !signal.aborted);
      loading = null;
    })();
    return loading;
  }
  return { refresh };
}

// stepElement is one step: a summary line and, opened, its messages and
// its fork form (a root's step) or a note that a fork replays the root.
function stepElement(s, id, signal, rootOf, app) {
  const body = h('div', { class: 'step-body' }, messagesOf(s, id, signal));
  // A fork replays its research's root: a sub-agent's step says so.
  const fork = s.agent === 'root' ? forkControl(s, rootOf, app)
    : h('p', { class: 'muted fork-none' }, 'To fork from here, fork the root at the step that read this agent\'s report.');
  return h('details', { class: 'step', 'data-step': s.step, 'data-run-id': s.run_id },
    h('summary', {}, summaryOf(s), s.replayed ? h('span', { class: 'badge replayed' }, ' replayed') : null), body, fork);
}

// summaryOf is what a step took, on one line.
function summaryOf(s) {
  const t = s.tokens || {};
  const parts = [
    count(t.prompt + t.completion, 'token') + (t.cached ? ' (' + fmtInt(t.cached) + ' cached' +
      (t.reasoning ? ', ' + fmtInt(t.reasoning) + ' reasoning' : '') + ')' : (t.reasoning ? ' (' + fmtInt(t.reasoning) + ' reasoning)' : '')),
    fmtCost(s.cost_usd),
    'model ' + secs(s.model_ms),
    'tools ' + secs(s.tool_ms),
  ];
  if (s.retries) parts.push(count(s.retries, 'retry', 'retries') + ' (' + (s.retry_outcomes || []).join(', ') + ')');
  if (s.version || s.behaviour) parts.push('gb ' + s.version + ' @ ' + s.behaviour);
  if (s.compaction) parts.push('compacted: ' + s.compaction.stubbed + ' stubbed, ' + fmtInt(s.compaction.tokens_before) + ' → ' + count(s.compaction.tokens_after, 'token'));
  const calls = [];
  for (const m of s.messages || []) for (const c of m.tool_calls || []) calls.push(c.name);
  return [
    h('strong', { class: 'step-n' }, 'Step ' + s.step),
    h('span', { class: 'muted', title: fmtDateTime(s.committed_at) }, ' ' + fmtTime(s.committed_at) + ' · ' + (s.model || 'model?') + ' · '),
    parts.join(' · '),
    h('span', { class: 'step-calls' }, calls.length ? ' → ' + calls.join(', ') : ' → answer'),
  ];
}

// secs is a duration in ms as seconds.
function secs(ms) { return ((Number(ms) || 0) / 1000).toFixed(1) + ' s'; }

// messagesOf shows the messages of a step.
function messagesOf(s, id, signal) {
  const msgs = s.messages || [];
  if (!msgs.length) return h('p', { class: 'muted' }, 'This step added no messages.');
  return msgs.map((m) => h('div', { class: 'step-msg role-' + roleWord(m.role), 'data-role': m.role },
    h('div', { class: 'step-role' }, roleLabel(m)),
    m.content ? h('pre', { class: 'step-text' }, m.content) : null,
    m.truncated ? more(s, id, signal, 'Cut at ' + fmtInt(Array.from(m.content).length) + ' of ' + fmtInt(m.content_chars) + ' characters.') : null,
    (m.tool_calls || []).map((c) => h('div', { class: 'tool-call', 'data-tool': c.name },
      h('span', { class: 'tool-name' }, '→ ' + c.name), h('span', { class: 'muted' }, ' ' + c.id),
      h('pre', { class: 'tool-args' }, c.arguments),
      c.truncated ? more(s, id, signal, 'Arguments cut at ' + fmtInt(Array.from(c.arguments).length) + ' of ' + fmtInt(c.arguments_chars) + ' characters.') : null))));
}

function roleWord(r) { return ['user', 'assistant', 'tool', 'system'].includes(r) ? r : 'other'; }

function roleLabel(m) {
  switch (m.role) {
    case 'assistant': return 'model';
    case 'tool': return 'result of ' + (m.name || 'a tool') + (m.tool_call_id ? ' (' + m.tool_call_id + ')' : '');
    case 'user': return 'given to the model';
    default: return m.role;
  }
}

// more is the note of a cut text, with a button that reads the step whole
// and shows it in place of the cut one.
function more(s, id, signal, text) {
  const note = h('p', { class: 'note step-cut' }, text + ' ');
  note.append(h('button', { type: 'button', class: 'link step-full', onclick: async (ev) => {
    ev.target.disabled = true;
    try {
      const page = await api('/v1/gb/research/' + id + '/steps?run=' + s.run_id + '&step=' + s.step + '&full=true', { signal });
      const whole = (page.steps || [])[0];
      if (whole) fill(ev.target.closest('.step-body'), messagesOf(whole, id, signal));
    } catch (e) {
      ev.target.disabled = false;
      note.append(h('span', { class: 'error' }, ' ' + e.message));
    }
  } }, 'Show all'));
  return note;
}
