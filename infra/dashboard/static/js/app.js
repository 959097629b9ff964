// The dashboard's entry point: sign-in, the header and a hash router.
//   #/            the caller's runs, newest first, and a form to start one
//   #/runs/{id}   a run: its tree, report, events, messages and sources
//   #/compare/{a}/{b}  two researches side by side, what differs marked
import { api, session, APIError } from './api.js';
import { h } from './dom.js';
import { runsView } from './runs.js';
import { runView } from './run.js';
import { compareView } from './compare.js';

const view = document.getElementById('view');
const nav = document.getElementById('nav');
let stop = () => {};

// app is what views get: how to sign out and how to report an error.
const app = {
  signOut(message) {
    session.clear();
    route(message);
  },
  // failed handles an error of a view's API call: a refused key signs out;
  // it returns false when the view should stop.
  failed(err) {
    if (err && err.name === 'AbortError') return false;
    if (err instanceof APIError && err.status === 401) {
      app.signOut('The API refused this key (' + err.message + '). Sign in again.');
      return false;
    }
    return true;
  },
};

function route(message) {
  stop();
  stop = () => {};
  view.replaceChildren();
  if (!session.key) {
    nav.replaceChildren();
    view.append(signIn(message));
    return;
  }
  nav.replaceChildren(
    h('a', { href: '#/' }, 'Runs'),
    h('button', { type: 'button', class: 'link', id: 'sign-out', onclick: () => app.signOut('Signed out.') }, 'Sign out'),
  );
  const m = /^#\/runs\/(\d+)$/.exec(location.hash);
  const c = /^#\/compare\/(\d+)\/(\d+)$/.exec(location.hash);
  if (m) stop = runView(view, Number(m[1]), app);
  else if (c) stop = compareView(view, Number(c[1]), Number(c[2]), app);
  else stop = runsView(view, app);
}

function signIn(message) {
  const input = h('input', { type: 'password', id: 'api-key', name: 'key', autocomplete: 'off', required: true,
    spellcheck: 'false', placeholder: 'gb_…' });
  const note = h('p', { class: message ? 'note' : 'note hidden', id: 'sign-in-note', role: 'status' }, message || '');
  const form = h('form', { id: 'sign-in', class: 'panel narrow' },
    h('h1', {}, 'Sign in'),
    h('p', { class: 'muted' }, 'Paste an API key (gb keys create --user NAME). It is kept in this tab only, until you sign out or close it.'),
    h('label', { for: 'api-key' }, 'API key'),
    input,
    h('button', { type: 'submit' }, 'Sign in'),
    note);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    note.className = 'note';
    note.textContent = 'Checking the key…';
    try {
      await api('/v1/gb/research?limit=1', { key });
    } catch (err) {
      note.className = 'note error';
      note.textContent = err instanceof APIError && err.status === 401 ? 'That key is not valid.' : 'Could not check the key: ' + err.message;
      return;
    }
    session.set(key);
    route();
  });
  queueMicrotask(() => input.focus());
  return form;
}

window.addEventListener('hashchange', () => route());
route();
