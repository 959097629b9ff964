// The page of one run. Its tree, report, messages and sources are loaded
// once, then again each time the tree's event timeline grows; the timeline
// is read from the tree's event stream (Server-Sent Events, resumed with
// Last-Event-ID when it drops) until its end. Where the API cannot stream
// (404, 501) it is long-polled (after=N&wait=20) instead; a server that
// answers at once instead of waiting is polled again after a short pause.
// Polling stops when every run of the tree has ended and no event is left
// to read.
import { api, sleep, APIError, streamEvents } from './api.js';
import { h } from './dom.js';
import { count, ended } from './format.js';
import { renderHead, renderTree, renderReport, eventRow, renderMessages, renderSources } from './panels.js';
import { renderAsk } from './ask.js';
import { renderPlan } from './plan.js';
import { stepsView } from './steps.js';
import { timelineView } from './timeline.js';

const waitSeconds = 20;
const maxEventRows = 2000;

// runView renders run id into root and returns the function that stops it.
export function runView(root, id, app) {
  const ac = new AbortController();
  const signal = ac.signal;
  const el = {
    head: h('section', { class: 'panel run-head', id: 'run-head' }, h('p', { class: 'muted' }, 'Loading run #' + id + '…')),
    ask: h('section', { class: 'panel ask hidden', id: 'ask' }),
    plan: h('section', { class: 'panel ask hidden', id: 'plan' }),
    tree: h('div', { id: 'tree-body' }),
    report: h('article', { class: 'report', id: 'report-body' }),
    events: h('tbody', { id: 'events-body' }),
    eventsScroll: null,
    eventCount: h('span', { class: 'muted', id: 'event-count' }),
    messages: h('div', { id: 'messages-body' }),
    sources: h('div', { id: 'sources-body' }),
    sourcesPanel: null,
    live: h('span', { class: 'live', id: 'live' }, 'connecting'),
  };
  el.eventsScroll = h('div', { class: 'scroll' }, h('table', { class: 'grid compact' },
    h('thead', {}, h('tr', {}, ['#', 'Time', 'Agent', 'Kind', 'Detail'].map((c) => h('th', {}, c)))), el.events));
  el.sourcesPanel = h('section', { class: 'panel hidden', id: 'sources' }, h('h2', {}, 'Sources'), el.sources);
  root.append(
    el.head,
    el.ask,
    el.plan,
    h('section', { class: 'panel', id: 'tree' }, h('h2', {}, 'Tree ', el.live), el.tree),
    h('div', { class: 'columns' },
      h('section', { class: 'panel', id: 'report' }, h('h2', {}, 'Report'), el.report),
      h('div', {},
        h('section', { class: 'panel', id: 'events' }, h('h2', {}, 'Events ', el.eventCount), el.eventsScroll),
        h('section', { class: 'panel', id: 'messages' }, h('h2', {}, 'Messages between agents'), el.messages),
        el.sourcesPanel)));
  const steps = stepsView(root, id, signal, app), timeline = timelineView(root, signal);

  const state = { id, names: new Map(), after: 0, events: 0, finished: false, gone: false };

  async function refresh() {
    const run = await api('/v1/gb/research/' + id, { signal });
    const [tree, msgs, srcs] = await Promise.all([
      api('/v1/gb/research/' + run.root_id + '/tree', { signal }),
      api('/v1/gb/research/' + id + '/messages', { signal }),
      api('/v1/gb/research/' + id + '/sources?tree=true', { signal }).catch((e) => e),
    ]);
    if (signal.aborted) return;
    for (const r of tree.runs) state.names.set(r.id, r.name || 'research');
    renderHead(el.head, run, app);
    renderAsk(el.ask, run, app, scheduleRefresh);
    renderPlan(el.plan, run, app, scheduleRefresh);
    renderTree(el.tree, tree, id);
    steps.refresh(run.root_id); timeline.update(tree);
    renderReport(el.report, run);
    import('./citations.js').then((m) => m.decorateCitations(el.report, run, signal)).catch(() => {});
    renderMessages(el.messages, msgs.messages || []);
    if (srcs instanceof APIError && srcs.status === 404) {
      el.sourcesPanel.className = 'panel hidden';
    } else if (srcs instanceof Error) {
      if (!app.failed(srcs)) return;
      el.sourcesPanel.className = 'panel';
      el.sources.replaceChildren(h('p', { class: 'note error' }, 'Could not load the sources: ' + srcs.message));
    } else {
      el.sourcesPanel.className = 'panel';
      renderSources(el.sources, (srcs && srcs.sources) || [], state.names);
    }
    state.finished = tree.runs.every(ended);
    // A long poll waiting on a tree that has just ended has nothing to wait for.
    if (state.finished && pending && pending.waits) pending.abort();
    document.title = '#' + id + ' ' + run.name + ' · ' + run.status + ' · gb';
  }

  // Refreshes run one at a time; events that land meanwhile ask for one more.
  let dirty = false;
  let refreshing = false;
  async function refreshLoop() {
    refreshing = true;
    while (dirty && !signal.aborted) {
      dirty = false;
      try {
        await refresh();
      } catch (e) {
        if (!app.failed(e)) break;
        if (e instanceof APIError && e.status === 404) { gone(); break; }
        setLive('error', 'retrying: ' + e.message);
        dirty = true;
        await sleep(2000, signal);
      }
      // Events that keep landing refresh the page at most four times a second.
      if (dirty) await sleep(250, signal);
    }
    refreshing = false;
  }
  function scheduleRefresh() {
    dirty = true;
    if (!refreshing) refreshLoop();
  }

  function addEvents(evs) {
    const stick = el.eventsScroll.scrollTop + el.eventsScroll.clientHeight >= el.eventsScroll.scrollHeight - 8;
    for (const ev of evs) {
      if (ev.kind === 'spawned' && ev.data && ev.data.name) state.names.set(ev.run_id, ev.data.name);
      state.after = Math.max(state.after, ev.seq);
      el.events.append(eventRow(ev, state.names));
    }
    timeline.addEvents(evs);
    state.events += evs.length;
    while (el.events.children.length > maxEventRows) el.events.firstChild.remove();
    el.eventCount.textContent = count(state.events, 'event');
    if (stick) el.eventsScroll.scrollTop = el.eventsScroll.scrollHeight;
  }

  function setLive(cls, text) {
    el.live.className = 'live ' + cls;
    el.live.textContent = text;
  }

  function gone() {
    state.gone = true;
    setLive('ended', 'gone');
    el.head.replaceChildren(h('p', { class: 'note error' }, 'Run #' + id + ' does not exist, or was deleted.'));
  }

  let pending = null;
  async function poll() {
    while (!signal.aborted && !state.gone) {
      // Once everything has ended, read what is left without waiting.
      const finished = state.finished;
      const wait = finished ? 0 : waitSeconds;
      const t0 = performance.now();
      let evs;
      pending = new AbortController();
      pending.waits = wait > 0;
      try {
        const page = await api('/v1/gb/research/' + id + '/events?after=' + state.after + '&wait=' + wait,
          { signal: AbortSignal.any([signal, pending.signal]) });
        evs = (page && page.events) || [];
      } catch (e) {
        if (e.name === 'AbortError' && !signal.aborted) continue;
        if (!app.failed(e)) return;
        if (e instanceof APIError && e.status === 404) { gone(); return; }
        setLive('error', 'retrying: ' + e.message);
        await sleep(2000, signal);
        continue;
      }
      if (evs.length) {
        addEvents(evs);
        // Names of agents spawned by these events come with the refresh.
        scheduleRefresh();
        setLive('on', 'live');
        if (evs.length < 500) await sleep(100, signal);
        continue;
      }
      if (finished) { setLive('ended', 'ended'); return; }
      setLive('on', 'live');
      // A server that ignored wait answered at once: pause before asking again.
      if (performance.now() - t0 < 1000) await sleep(1000, signal);
    }
  }

  // follow reads the event stream until the tree's end, reconnecting after
  // the last event it has when the stream drops, and falls back to poll
  // where the API does not stream.
  async function follow() {
    let lastID = 0, failures = 0, first = true;
    while (!signal.aborted && !state.gone) {
      try {
        const r = await streamEvents('/v1/gb/research/' + id + '/events/stream', { lastID, signal, onEvents(evs) {
          addEvents(evs);
          scheduleRefresh();
          setLive('on', 'live');
        } });
        lastID = r.lastID;
        if (r.ended) {
          state.finished = true;
          scheduleRefresh();
          setLive('ended', 'ended');
          return;
        }
        failures = r.progressed ? 0 : failures + 1;
        setLive('on', 'live');
      } catch (e) {
        if (signal.aborted) return;
        // No stream here (404, 501), or the user has the most open (429).
        if (first && e instanceof APIError && [404, 429, 501].includes(e.status)) return poll();
        if (!app.failed(e)) return;
        failures++;
        setLive('error', 'retrying: ' + e.message);
      }
      first = false;
      await sleep(Math.min(failures, 5) * 1000, signal);
    }
  }

  (async () => {
    dirty = true;
    await refreshLoop();
    if (!signal.aborted && !state.gone) follow();
  })();
  return () => ac.abort();
}
