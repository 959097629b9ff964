// The browser test of a step's "Fork from here" form: drives Debian's
// chromium through playwright-core against a running stack.
//
//   node e2e/fork.mjs BASE_URL API_KEY ROOT_RUN_ID SUBAGENT_RUN_ID
//
// ROOT_RUN_ID is the root of a finished tree with sub-agents and
// SUBAGENT_RUN_ID one of them (fork_e2e_test.go). The fork route is the
// browser's own here (page.route): the test sees what the form sends and
// answers it. On the root's page it forks from step 2 with every field
// set: the form must POST to the root's fork route the agent's run id, the
// step and each field, and, answered 202 with a research (the sub-agent's,
// which exists), open that research's page. On the sub-agent's page it
// forks from step 1 with the instruction alone: the request goes to the
// root's route with the sub-agent's run id and no empty field, and a 400
// answer's message, which holds markup, shows under the form as text while
// the page stays. The screenshot fork.png goes to $SCREENSHOT_DIR. It
// prints "ok: ..." per check and exits 0 when all pass.
import path from 'node:path';
import { open, usage } from './lib.mjs';

const [base, key, root, kid] = process.argv.slice(2);
if (!base || !key || !Number(root) || !Number(kid)) usage('node e2e/fork.mjs BASE_URL API_KEY ROOT_RUN_ID SUBAGENT_RUN_ID');
const [rootID, kidID] = [Number(root), Number(kid)];
const { page, shots, check, api, signIn, finish } = await open({
  name: 'the fork browser test', base, key, seconds: 90,
  // The refusal the test answers is logged by the browser: it was meant.
  ignore: (m) => /404 \(Not Found\)|501 \(Not Implemented\)/.test(m.text()) || /\/fork$/.test(m.location().url || ''),
});
// refusal is the 400 the test answers the second fork with.
const refusal = { code: 'bad_request', field: 'step', message: 'step 1 of <img src=x onerror="window.__xss=\'fork\'"> cannot be forked: it spawned nothing yet' };

await finish(run, 'fork-failure.png');

async function run() {
  const kidRun = await api('/v1/gb/research/' + kidID);
  // What the page sends to the fork route, and how the test answers.
  const sent = [];
  let answer = null;
  await page.route('**/v1/gb/research/*/fork', async (route) => {
    const r = route.request();
    sent.push({ method: r.method(), path: new URL(r.url()).pathname, type: r.headers()['content-type'], body: r.postDataJSON() });
    await route.fulfill(answer);
  });

  // On the root's page, from step 2, with every field.
  await signIn();
  await page.goto(base + '/ui/#/runs/' + rootID);
  await page.waitForSelector('#live.ended');
  const step = (runID, n) => `#steps-body details.step[data-run-id="${runID}"][data-step="${n}"]`;
  await page.waitForSelector(step(rootID, 2));
  check(await page.$$eval('#steps-body details.step', (ds) => ds.every((d) => d.querySelector(':scope > details.fork > summary')?.textContent === 'Fork from here')),
    'every step has its "Fork from here" control');
  await page.click(step(rootID, 2) + ' > summary');
  await page.click(step(rootID, 2) + ' details.fork > summary');
  const field = (runID, n, name) => `#fork-${name}-${runID}-${n}`;
  await page.fill(field(rootID, 2, 'model'), 'offline');
  await page.fill(field(rootID, 2, 'cost'), '0.25');
  await page.fill(field(rootID, 2, 'steps'), '6');
  await page.selectOption(field(rootID, 2, 'citations'), 'flag');
  await page.fill(field(rootID, 2, 'instruction'), 'Look at sync.Cond as well');
  answer = { status: 202, contentType: 'application/json', headers: { Location: '/v1/gb/research/' + kidID }, body: JSON.stringify(kidRun) };
  await page.click(step(rootID, 2) + ' .fork-form button[type=submit]');
  await page.waitForURL(new RegExp(`#/runs/${kidID}$`));
  check(sent.length === 1 && sent[0].method === 'POST' && sent[0].path === `/v1/gb/research/${rootID}/fork` && sent[0].type === 'application/json',
    'the form POSTs JSON to the root\'s fork route: ' + JSON.stringify(sent[0] && sent[0].path));
  const want = { agent: rootID, step: 2, model: 'offline', max_cost_usd: 0.25, max_steps: 6, citations: 'flag', instruction: 'Look at sync.Cond as well' };
  check(JSON.stringify(sent[0].body) === JSON.stringify(want), 'it sends the agent, the step and every field: ' + JSON.stringify(sent[0].body));
  await page.waitForFunction((name) => document.querySelector('#run-title')?.textContent.includes(name), kidRun.name);
  check(true, 'answered 202, the page opens the new research: #' + kidID);

  // On the sub-agent's page, from step 1, with the instruction alone; refused.
  await page.waitForSelector(step(kidID, 1));
  await page.click(step(kidID, 1) + ' > summary');
  await page.click(step(kidID, 1) + ' details.fork > summary');
  await page.fill(field(kidID, 1, 'instruction'), 'Stop after the first source');
  answer = { status: 400, contentType: 'application/json', body: JSON.stringify({ error: refusal }) };
  await page.click(step(kidID, 1) + ' .fork-form button[type=submit]');
  const note = step(kidID, 1) + ' .fork-note.error';
  await page.waitForSelector(note);
  check(sent.length === 2 && sent[1].path === `/v1/gb/research/${rootID}/fork` &&
    JSON.stringify(sent[1].body) === JSON.stringify({ agent: kidID, step: 1, instruction: 'Stop after the first source' }),
    'a sub-agent\'s fork goes to its root\'s route with the sub-agent\'s run id, no empty field: ' + JSON.stringify(sent[1]));
  check(await page.textContent(note) === 'step: ' + refusal.message, 'a 400 shows its message under the form: ' + await page.textContent(note));
  check(await page.$$eval('#steps img', (is) => is.length) === 0 && await page.evaluate(() => window.__xss === undefined),
    'the message\'s markup shows as text and runs nothing');
  check(new URL(page.url()).hash === '#/runs/' + kidID && await page.isEnabled(step(kidID, 1) + ' .fork-form button[type=submit]'),
    'the page stays, and the form can be sent again');
  await page.locator(step(kidID, 1)).screenshot({ path: path.join(shots, 'fork.png') });
}
