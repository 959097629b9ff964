// The "Fork from here" control of a step of a root: a form that starts a
// new research replaying the root up to that step, then going on live
// with the model, budget, steps, citation check and an instruction the
// owner may change (POST /v1/gb/research/{root}/fork with the agent's run
// id and the step; fields left empty are left out, so the research's own
// hold). The answer (202) is the new research, whose page opens; a
// refusal shows its message under the form, as text.
import { api, APIError } from './api.js';
import { h } from './dom.js';

// forkControl is the fork form of step st (of agent st.run_id), closed
// until its summary is clicked; rootOf() is the id of the tree's root, the
// research the fork is asked of.
export function forkControl(st, rootOf, app) {
  const id = (name) => 'fork-' + name + '-' + st.run_id + '-' + st.step;
  const model = h('input', { id: id('model'), name: 'model', maxlength: 200, autocomplete: 'off', placeholder: 'the research\'s' });
  const cost = h('input', { id: id('cost'), name: 'max_cost_usd', type: 'number', min: 0, step: 'any', placeholder: 'the research\'s' });
  const steps = h('input', { id: id('steps'), name: 'max_steps', type: 'number', min: 1, max: 40, placeholder: 'the research\'s' });
  const citations = h('select', { id: id('citations'), name: 'citations' },
    h('option', { value: '' }, 'the research\'s'), ['off', 'flag', 'revise'].map((m) => h('option', { value: m }, m)));
  const instruction = h('textarea', { id: id('instruction'), name: 'instruction', rows: 3, maxlength: 4000,
    placeholder: 'What the fork should do differently from here (optional)' });
  const note = h('p', { class: 'note hidden fork-note', role: 'status' });
  const send = h('button', { type: 'submit' }, 'Fork');
  const field = (label, input) => h('div', { class: 'fork-field' }, h('label', { for: input.id }, label), input);
  const form = h('form', { class: 'fork-form' },
    h('p', { class: 'muted' }, 'A new research that goes on from step ' + st.step + ' of ' + (st.agent || 'this agent') +
      ', with what is set here; what is left empty stays as the research had it.'),
    h('div', { class: 'fork-fields' }, field('Model', model), field('Max cost (USD)', cost), field('Max steps', steps),
      field('Citations', citations)),
    field('Instruction', instruction),
    send, note);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { agent: st.run_id, step: st.step };
    if (model.value.trim() !== '') body.model = model.value.trim();
    if (cost.value !== '') body.max_cost_usd = Number(cost.value);
    if (steps.value !== '') body.max_steps = Number(steps.value);
    if (citations.value !== '') body.citations = citations.value;
    if (instruction.value.trim() !== '') body.instruction = instruction.value;
    send.disabled = true;
    note.className = 'note fork-note';
    note.textContent = 'Forking…';
    try {
      const run = await api('/v1/gb/research/' + rootOf() + '/fork', { method: 'POST', body });
      location.hash = '#/runs/' + run.id;
    } catch (e) {
      send.disabled = false;
      if (!app.failed(e)) return;
      note.className = 'note error fork-note';
      note.textContent = (e instanceof APIError && e.field ? e.field + ': ' : '') + e.message;
    }
  });
  return h('details', { class: 'fork', 'data-run-id': st.run_id, 'data-step': st.step },
    h('summary', {}, 'Fork from here'), form);
}
