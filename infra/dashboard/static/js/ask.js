// The question an interactive research asks its owner, and the box that
// answers it. The panel shows while the run waits for an answer (its
// question and answer_deadline are set) and hides once the answer, or the
// deadline, resumed it. What the owner is typing survives the page's
// refreshes: the panel is rebuilt only when the question changes.
import { api, APIError } from './api.js';
import { h } from './dom.js';
import { fmtDateTime } from './format.js';

const shown = new WeakMap();

// renderAsk shows run's question in el, with an answer box, or hides el
// when the run waits for no answer. onAnswered is called after an answer
// is taken or refused, for the page to refresh.
export function renderAsk(el, run, app, onAnswered) {
  const key = run.question ? run.id + '\n' + run.answer_deadline + '\n' + run.question : '';
  if (shown.get(el) === key) return;
  shown.set(el, key);
  if (!key) {
    el.className = 'panel ask hidden';
    el.replaceChildren();
    return;
  }
  const text = h('textarea', { id: 'answer', name: 'text', rows: 3, maxlength: 10000, required: true,
    placeholder: 'Your answer' });
  const note = h('p', { class: 'note hidden', id: 'ask-note', role: 'status' });
  const send = h('button', { type: 'submit' }, 'Answer');
  const form = h('form', { id: 'ask-form' }, h('label', { for: 'answer' }, 'Your answer'), text, send, note);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    send.disabled = true;
    note.className = 'note';
    note.textContent = 'Sending…';
    try {
      await api('/v1/gb/research/' + run.id + '/answer', { method: 'POST', body: { text: text.value } });
      note.textContent = 'Answered: the research goes on with your answer.';
      text.disabled = true;
    } catch (e) {
      if (!app.failed(e)) return;
      note.className = 'note error';
      note.textContent = (e instanceof APIError && e.field ? e.field + ': ' : '') + e.message;
      send.disabled = e instanceof APIError && e.status === 409;
    }
    onAnswered();
  });
  el.className = 'panel ask';
  el.replaceChildren(
    h('h2', {}, 'This research asks you'),
    h('p', { class: 'question', id: 'ask-question' }, run.question),
    h('p', { class: 'muted', id: 'ask-deadline' },
      'Answer by ' + fmtDateTime(run.answer_deadline) + '; after that it goes on with its best judgement.'),
    form);
}
