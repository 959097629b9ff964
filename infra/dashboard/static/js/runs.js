// The list of the caller's runs, newest first, refreshed while it is shown,
// and the form that starts a research.
import { api, sleep, APIError } from './api.js';
import { h } from './dom.js';
import { badge, ended, fmtCost, fmtDateTime, truncate, ago, usageCells } from './format.js';

// runsView renders into root and returns the function that stops it.
export function runsView(root, app) {
  const ac = new AbortController();
  const signal = ac.signal;
  const body = h('tbody', { id: 'runs-body' });
  const more = h('button', { type: 'button', class: 'hidden', id: 'runs-more' }, 'Older runs');
  const status = h('p', { class: 'muted', id: 'runs-status' }, 'Loading…');
  let cursor = '';
  let pages = 1;

  root.append(
    startForm(app),
    h('section', { class: 'panel', id: 'runs' },
      h('h2', {}, 'Your runs'),
      h('table', { class: 'grid' },
        h('thead', {}, h('tr', {},
          ['Run', 'Name', 'Topic', 'Status', 'State', 'Steps', 'Tokens', 'Cached', 'Cost', 'Created'].map((c) => h('th', {}, c)))),
        body),
      status, more));

  async function load(append) {
    const q = '/v1/gb/research?limit=50' + (append && cursor ? '&cursor=' + encodeURIComponent(cursor) : '');
    const page = await api(q, { signal });
    // A refresh that lands after older pages were asked for would drop them.
    if (!append && pages > 1) return page.runs;
    cursor = page.next_cursor || '';
    more.className = cursor ? '' : 'hidden';
    const rows = page.runs.map(row);
    if (append) body.append(...rows);
    else body.replaceChildren(...rows);
    status.textContent = body.children.length ? '' : 'No runs yet: start a research above.';
    return page.runs;
  }

  more.addEventListener('click', () => { pages++; load(true).catch((e) => app.failed(e)); });

  // The first page is refreshed, fast while something works, until older
  // pages are asked for; they are left as loaded.
  (async () => {
    while (!signal.aborted && pages === 1) {
      let runs = [];
      try {
        runs = await load(false);
      } catch (e) {
        if (!app.failed(e)) return;
        status.textContent = 'Could not load the runs: ' + e.message;
      }
      await sleep(runs.some((r) => !ended(r)) ? 1500 : 5000, signal);
    }
  })();
  return () => ac.abort();
}

function row(r) {
  return h('tr', { 'data-run-id': r.id, 'data-status': r.status },
    h('td', {}, h('a', { href: '#/runs/' + r.id }, '#' + r.id)),
    h('td', {}, r.name || 'research', r.parent_id ? h('span', { class: 'muted' }, ' ↳ of #' + r.parent_id) : null),
    h('td', { class: 'topic', title: r.topic }, truncate(r.topic, 120)),
    h('td', {}, badge(r.status)),
    h('td', {}, r.state),
    h('td', { class: 'num' }, r.steps + '/' + r.max_steps),
    usageCells(r),
    h('td', { class: 'num' }, fmtCost(r.cost_usd)),
    h('td', { title: fmtDateTime(r.created_at) }, ago(r.created_at)));
}

function startForm(app) {
  const topic = h('textarea', { id: 'topic', name: 'topic', rows: 3, maxlength: 2000, required: true,
    placeholder: 'What should the agents research?' });
  const steps = h('input', { id: 'max-steps', name: 'max_steps', type: 'number', min: 1, max: 40, placeholder: '10' });
  const ask = h('input', { id: 'interactive', name: 'interactive', type: 'checkbox' });
  const plan = h('input', { id: 'approve-plan', name: 'approve_plan', type: 'checkbox' });
  const note = h('p', { class: 'note hidden', id: 'start-note', role: 'status' });
  const form = h('form', { class: 'panel', id: 'start' },
    h('h2', {}, 'Start a research'),
    h('label', { for: 'topic' }, 'Topic'), topic,
    h('div', { class: 'row' },
      h('label', { for: 'max-steps' }, 'Max steps per agent'), steps,
      ask, h('label', { for: 'interactive', title: 'It may ask you a question whose answer changes the research' },
        'Let it ask me a question'),
      plan, h('label', { for: 'approve-plan', title: 'It proposes the sub-agents it means to spawn and waits for your decision' },
        'Approve its sub-agents first'),
      h('button', { type: 'submit' }, 'Start')),
    note);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { topic: topic.value };
    if (steps.value !== '') body.max_steps = Number(steps.value);
    if (ask.checked) body.interactive = true;
    if (plan.checked) body.approve_plan = true;
    note.className = 'note';
    note.textContent = 'Starting…';
    try {
      const run = await api('/v1/gb/research', { method: 'POST', body });
      location.hash = '#/runs/' + run.id;
    } catch (e) {
      if (!app.failed(e)) return;
      note.className = 'note error';
      note.textContent = (e instanceof APIError && e.field ? e.field + ': ' : '') + e.message;
    }
  });
  return form;
}
