// The browser test of a step's "Fork from here" form: drives Debian's
// chromium through playwright-core against a running stack.
//
//   node e2e/fork.mjs BASE_URL API_KEY ROOT_RUN_ID SUBAGENT_RUN_ID
//
// ROOT_RUN_ID is the root of a finished tree with sub-agents and
// SUBAGENT_RUN_ID one of them (fork_e2e_test.go). Every step of the root
// has the form; a sub-agent's steps say a fork replays the root instead.
// From the root's step 1, with steps, citations and an instruction set,
// the form POSTs JSON to the API's fork route with the root's id, the
// step and each field set, and the research the API answers 202 with
// opens: a fork of the root at step 1, whose replayed step is marked. From
// the root's last step, its report, the API's 400 shows under the form as
// text; a refusal whose message holds markup (answered by the browser
// here, page.route) shows as text and runs nothing. The screenshot
// fork.png goes to $SCREENSHOT_DIR. It prints "forked run N", "ok: ..."
// per check, and exits 0 when all pass.
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
  const rootRun = await api('/v1/gb/research/' + rootID);
  // What the page sends to the fork route; answer, when set, is the
  // browser's own answer, else the API answers.
  const sent = [];
  let answer = null;
  await page.route('**/v1/gb/research/*/fork', async (route) => {
    const r = route.request();
    sent.push({ method: r.method(), path: new URL(r.url()).pathname, type: r.headers()['content-type'], body: r.postDataJSON() });
    if (answer) await route.fulfill(answer);
    else await route.continue();
  });

  await signIn();
  const step = (runID, n) => `#steps-body details.step[data-run-id="${runID}"][data-step="${n}"]`;
  await page.goto(base + '/ui/#/runs/' + kidID);
  await page.waitForSelector(step(kidID, 1));
  check(await page.$$eval(`#steps-body details.step[data-run-id="${kidID}"]`, (ds) => ds.length > 0 &&
    ds.every((d) => !d.querySelector('details.fork') && d.querySelector('.fork-none'))),
  'a sub-agent\'s steps have no fork form, and say to fork the root');
  await page.goto(base + '/ui/#/runs/' + rootID);
  await page.waitForSelector('#live.ended');
  await page.waitForSelector(step(rootID, rootRun.steps));
  await page.waitForSelector(step(rootID, 1));
  check(await page.$$eval(`#steps-body details.step[data-run-id="${rootID}"]`, (ds) => ds.length > 1 &&
    ds.every((d) => d.querySelector(':scope > details.fork > summary')?.textContent === 'Fork from here')),
  'every step of the root has its "Fork from here" control');

  // From the root's step 1, with fields set: the API forks.
  const field = (n, name) => `#fork-${name}-${rootID}-${n}`;
  await page.click(step(rootID, 1) + ' > summary');
  await page.click(step(rootID, 1) + ' details.fork > summary');
  await page.fill(field(1, 'steps'), '6');
  await page.selectOption(field(1, 'citations'), 'flag');
  await page.fill(field(1, 'instruction'), 'Look at sync.Cond as well');
  await page.click(step(rootID, 1) + ' .fork-form button[type=submit]');
  await page.waitForURL((u) => /#\/runs\/\d+$/.test(u.hash) && u.hash !== '#/runs/' + rootID);
  const forkID = Number(new URL(page.url()).hash.split('/').pop());
  check(sent.length === 1 && sent[0].method === 'POST' && sent[0].path === `/v1/gb/research/${rootID}/fork` && sent[0].type === 'application/json',
    'the form POSTs JSON to the root\'s fork route: ' + JSON.stringify(sent[0] && sent[0].path));
  const want = { agent: rootID, step: 1, max_steps: 6, citations: 'flag', instruction: 'Look at sync.Cond as well' };
  check(JSON.stringify(sent[0].body) === JSON.stringify(want), 'it sends the root, the step and every field set: ' + JSON.stringify(sent[0].body));
  const fork = await api('/v1/gb/research/' + forkID);
  check(fork.forked_from === rootID && fork.fork_step === 1 && fork.max_steps === 6, 'the page opens the fork: #' + forkID);
  console.log('forked run ' + forkID);
  await page.waitForSelector(step(forkID, 1) + ' .badge.replayed');
  check(true, 'the fork\'s step 1 is marked replayed');
  const from = await page.textContent('#run-head');
  check(from.includes('Forked from') && from.includes('#' + rootID + ' at step 1'), 'the fork\'s head says what it was forked from');

  // From the root's report: the API refuses, and says why under the form.
  await page.goto(base + '/ui/#/runs/' + rootID);
  await page.waitForSelector(step(rootID, rootRun.steps));
  const last = step(rootID, rootRun.steps);
  await page.click(last + ' > summary');
  await page.click(last + ' details.fork > summary');
  await page.click(last + ' .fork-form button[type=submit]');
  await page.waitForSelector(last + ' .fork-note.error');
  const said = await page.textContent(last + ' .fork-note.error');
  check(said.startsWith('step: ') && said.includes('report'), 'the API\'s 400 shows under the form: ' + said);

  // A refusal with markup in it shows as text.
  answer = { status: 400, contentType: 'application/json', body: JSON.stringify({ error: refusal }) };
  await page.click(last + ' .fork-form button[type=submit]');
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent.includes('onerror'), last + ' .fork-note.error');
  check(await page.textContent(last + ' .fork-note.error') === 'step: ' + refusal.message, 'a refusal\'s markup shows as text');
  check(await page.$$eval('#steps img', (is) => is.length) === 0 && await page.evaluate(() => window.__xss === undefined),
    'the message\'s markup runs nothing');
  check(new URL(page.url()).hash === '#/runs/' + rootID && await page.isEnabled(last + ' .fork-form button[type=submit]'),
    'the page stays, and the form can be sent again');
  await page.locator(last).screenshot({ path: path.join(shots, 'fork.png') });
}
