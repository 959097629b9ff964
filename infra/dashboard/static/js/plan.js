// The plan of sub-agents a research started with approve_plan proposes to
// its owner, with the buttons that approve or reject it. The panel shows
// while the plan waits for a decision (run.plan.state is proposed) and
// hides once the decision, or the deadline, resumed the run. Editing the
// list is left to the API and the CLI (gb research plan --file); the note
// is told to the research with the decision. What the owner is typing
// survives the page's refreshes: the panel is rebuilt only when the plan
// changes.
import { api, APIError } from './api.js';
import { h } from './dom.js';
import { fmtDateTime } from './format.js';

const shown = new WeakMap();

// renderPlan shows run's proposed plan in el, with its decision buttons,
// or hides el when the run waits for no decision. onDecided is called
// after a decision is taken or refused, for the page to refresh.
export function renderPlan(el, run, app, onDecided) {
  const plan = run.plan && run.plan.state === 'proposed' ? run.plan : null;
  const key = plan ? run.id + '\n' + plan.deadline + '\n' + JSON.stringify(plan.subagents) : '';
  if (shown.get(el) === key) return;
  shown.set(el, key);
  if (!key) {
    el.className = 'panel ask hidden';
    el.replaceChildren();
    return;
  }
  const rows = plan.subagents.map((s) => h('tr', {},
    h('td', { class: 'name' }, s.name),
    h('td', {}, s.type || 'researcher'),
    h('td', {}, String(s.max_steps || '')),
    h('td', {}, s.reason),
    h('td', {}, s.task)));
  const text = h('textarea', { id: 'plan-note', name: 'note', rows: 2, maxlength: 2000,
    placeholder: 'A note for the research (optional)' });
  const note = h('p', { class: 'note hidden', id: 'plan-status', role: 'status' });
  const approve = h('button', { type: 'button', id: 'plan-approve' }, 'Approve');
  const reject = h('button', { type: 'button', id: 'plan-reject', class: 'secondary' }, 'Reject');
  const decide = async (decision) => {
    approve.disabled = reject.disabled = true;
    note.className = 'note';
    note.textContent = 'Sending…';
    const body = { decision };
    if (text.value.trim() !== '') body.note = text.value;
    try {
      await api('/v1/gb/research/' + run.id + '/plan', { method: 'POST', body });
      note.textContent = decision === 'approve'
        ? 'Approved: the research spawns these sub-agents.'
        : 'Rejected: the research may propose another plan or go on without sub-agents.';
      text.disabled = true;
    } catch (e) {
      if (!app.failed(e)) return;
      note.className = 'note error';
      note.textContent = (e instanceof APIError && e.field ? e.field + ': ' : '') + e.message;
      approve.disabled = reject.disabled = e instanceof APIError && e.status === 409;
    }
    onDecided();
  };
  approve.addEventListener('click', () => decide('approve'));
  reject.addEventListener('click', () => decide('reject'));
  el.className = 'panel ask';
  el.replaceChildren(
    h('h2', {}, 'This research proposes sub-agents'),
    h('table', { id: 'plan-subagents' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Type'), h('th', {}, 'Steps'),
        h('th', {}, 'Reason'), h('th', {}, 'Task'))),
      h('tbody', {}, ...rows)),
    h('p', { class: 'muted', id: 'plan-deadline' },
      'Decide by ' + fmtDateTime(plan.deadline) + '; after that it goes on without sub-agents. ' +
      'To approve an edited list, use gb research plan ' + run.id + ' approve --file edited.json.'),
    h('label', { for: 'plan-note' }, 'Note'), text,
    h('div', { class: 'row' }, approve, reject),
    note);
}
