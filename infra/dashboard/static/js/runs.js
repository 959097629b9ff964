// The list of the caller's runs, newest first, and the form that starts a
// research. The list leaves reports out (the API does unless asked). Its
// first page is read again when something on it changes: while runs on it
// work, the page long-polls the events of their trees (at most maxWatched
// trees at once) and reads the page again when one has news; otherwise,
// and to see runs started elsewhere, it reads it again every idleMs. Two
// runs picked with their boxes open side by side with Compare.
import { api, sleep, APIError } from './api.js';
import { h } from './dom.js';
import { badge, ended, fmtCost, fmtDateTime, truncate, ago, usageCells } from './format.js';

const waitSeconds = 20;
const maxWatched = 3;
const idleMs = 30_000;
// unwatchedMs is how often the page is read while more trees work than
// are watched.
const unwatchedMs = 5_000;

// runsView renders into root and returns the function that stops it.
export function runsView(root, app) {
  const ac = new AbortController();
  const signal = ac.signal;
  const body = h('tbody', { id: 'runs-body' });
  const more = h('button', { type: 'button', class: 'hidden', id: 'runs-more' }, 'Older runs');
  const status = h('p', { class: 'muted', id: 'runs-status' }, 'Loading…');
  // picked holds the ids of the runs picked to compare, the first first;
  // a third pick lets the first go.
  const picked = [];
  const compare = h('button', { type: 'button', id: 'compare-runs', disabled: true, title: 'Pick two runs to compare them',
    onclick: () => { location.hash = '#/compare/' + picked[0] + '/' + picked[1]; } }, 'Compare');
  const pick = (id, on) => {
    const i = picked.indexOf(id);
    if (on && i < 0) picked.push(id);
    if (!on && i >= 0) picked.splice(i, 1);
    while (picked.length > 2) {
      const box = body.querySelector(`tr[data-run-id="${picked.shift()}"] input.pick`);
      if (box) box.checked = false;
    }
    compare.disabled = picked.length !== 2;
    compare.textContent = picked.length === 2 ? 'Compare #' + picked[0] + ' and #' + picked[1] : 'Compare';
  };
  const row = (r) => runRow(r, picked.includes(r.id), pick);
  const panel = h('section', { class: 'panel', id: 'runs', 'data-watching': '' },
    h('h2', {}, 'Your runs', compare),
    h('table', { class: 'grid' },
      h('thead', {}, h('tr', {},
        ['Run', 'Name', 'Topic', 'Status', 'State', 'Steps', 'Tokens', 'Cached', 'Cost', 'Created'].map((c) => h('th', {}, c)))),
      body),
    status, more);
  let cursor = '';
  let pages = 1;

  root.append(startForm(app), panel);

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

  // news is set when a watched tree had events since the page was last
  // read; wake ends the pause between reads at once.
  let news = false;
  let wake = () => {};
  const changed = () => { news = true; wake(); };
  const watches = treeWatches(signal, app, changed, (ids) => panel.setAttribute('data-watching', ids.join(' ')));

  // The first page is read again until older pages are asked for; they
  // are left as loaded.
  (async () => {
    while (!signal.aborted && pages === 1) {
      news = false;
      let runs = null;
      try {
        runs = await load(false);
      } catch (e) {
        if (!app.failed(e)) break;
        status.textContent = 'Could not load the runs: ' + e.message;
      }
      const unwatched = runs ? watches.follow(runs) : 0;
      if (!news) await pause(runs === null || unwatched > 0 ? unwatchedMs : idleMs);
      // Events come in bursts: one read for a burst.
      await sleep(250, signal);
    }
    watches.stop();
  })();

  // pause waits ms, or less when wake is called or the view stops.
  function pause(ms) {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        wake = () => {};
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done);
      wake = done;
    });
  }
  return () => ac.abort();
}

// treeWatches long-polls the events of the trees whose runs work, calling
// changed when one of them has new events and shown with the ids of the
// trees it watches. follow(runs) starts watching the trees of runs that
// have not ended (up to maxWatched) and stops watching the others; it
// returns how many working trees are left unwatched.
function treeWatches(signal, app, changed, shown) {
  const watched = new Map();
  function follow(runs) {
    const active = [...new Set(runs.filter((r) => !ended(r)).map((r) => r.root_id || r.id))];
    for (const [id, w] of watched) {
      if (!active.includes(id)) { w.abort(); watched.delete(id); }
    }
    for (const id of active) {
      if (watched.size >= maxWatched) break;
      if (!watched.has(id)) watch(id);
    }
    shown([...watched.keys()]);
    return active.length - watched.size;
  }
  function stop() {
    for (const w of watched.values()) w.abort();
    watched.clear();
    shown([]);
  }
  // watch reads tree id's events up to now without waiting (its cursor),
  // asks for the page to be read again (it may have changed since), then
  // long-polls from there.
  async function watch(id) {
    const w = new AbortController();
    watched.set(id, w);
    const sig = AbortSignal.any([signal, w.signal]);
    let after = 0;
    let caughtUp = false;
    while (!sig.aborted) {
      const t0 = performance.now();
      let page;
      try {
        page = await api('/v1/gb/research/' + id + '/events?after=' + after + '&wait=' + (caughtUp ? waitSeconds : 0), { signal: sig });
      } catch (e) {
        if (e.name === 'AbortError' || !app.failed(e)) break;
        if (e instanceof APIError && e.status === 404) { changed(); break; }
        await sleep(2000, sig);
        continue;
      }
      const evs = (page && page.events) || [];
      if (evs.length) after = page.next_after || evs[evs.length - 1].seq;
      if (!caughtUp) {
        if (evs.length >= 500) continue;
        caughtUp = true;
        changed();
      } else if (evs.length) {
        changed();
      } else if (performance.now() - t0 < 1000) {
        // A server that ignored wait answered at once: pause before asking again.
        await sleep(2000, sig);
      }
    }
    if (watched.get(id) === w) watched.delete(id);
  }
  return { follow, stop };
}

// runRow is run r's row of the list, with the box that picks it to
// compare, checked when picked; pick(id, checked) is told of a change.
function runRow(r, checked, pick) {
  return h('tr', { 'data-run-id': r.id, 'data-status': r.status },
    h('td', { class: 'pick' }, h('input', { type: 'checkbox', class: 'pick', 'aria-label': 'Pick #' + r.id + ' to compare', checked,
      onchange: (ev) => pick(r.id, ev.target.checked) }), h('a', { href: '#/runs/' + r.id }, '#' + r.id)),
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
