// The dashboard's browser test: drives Debian's chromium through
// playwright-core against a running stack.
//
//   node e2e/run.mjs BASE_URL API_KEY [XSS_RUN_ID [TIMED_OUT_RUN_ID]]
//   E2E_ASK=1 node e2e/run.mjs BASE_URL API_KEY
//   E2E_PLAN=1 node e2e/run.mjs BASE_URL API_KEY
//
// It signs in, starts the demo research, watches the tree grow to its
// sub-agents and finish, opens a sub-agent and reads its report, lists the
// runs, and, given XSS_RUN_ID (a run whose topic and report hold markup,
// with 1234 cached and 567 reasoning tokens and one model call settled at
// its estimate, and three sources: a page fetched (200, 51,234 bytes), one
// refused (404) and a search result), checks that the markup shows as text
// and runs nothing and that its usage and sources show; given
// TIMED_OUT_RUN_ID (a run that timed out, without a report), checks that
// the page treats it as ended. Along the way it checks the dashboard's
// Markdown (markdown-it's tokens built into DOM nodes), the tree's event
// numbers, a Cancel button that stays the same element while the page
// refreshes, dates in the browser's locale (the browser runs in de-DE,
// Europe/Berlin), and a runs list without reports that is not read again
// on a timer while nothing works. Screenshots go to
// $SCREENSHOT_DIR (default: .data/screenshots at the top of the repository).
// With E2E_ASK=1 it signs in, starts an interactive research that asks its
// owner a question, and answers it in the run page's answer box instead.
// With E2E_PLAN=1 it starts a research that proposes its sub-agents, and
// approves its plan with the run page's approve button ("planned run N").
// It prints "started run N" (or "asked run N") and exits 0 when every
// check passes.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { open, usage } from './lib.mjs';

// The demo topic of `gb demo` (cmd/gb/demo.go): three parts, so the
// offline policy spawns three sub-agents.
const demoTopic = 'How do goroutines and channels synchronize work, and how does the context package carry ' +
  'cancellation and deadlines, and how does net/http serve HTTP requests?';

const [base, key, xssRun, timedOutRun] = process.argv.slice(2);
if (!base || !key) usage('node e2e/run.mjs BASE_URL API_KEY [XSS_RUN_ID [TIMED_OUT_RUN_ID]]');
const here = path.dirname(fileURLToPath(import.meta.url));

// The browser's locale and time zone; dates on the page must be written
// the way this locale writes them.
const locale = { name: 'de-DE', timeZone: 'Europe/Berlin' };
const localDateTime = (s) => new Date(s).toLocaleString(locale.name, { timeZone: locale.timeZone });

// The whole run is bounded, whatever hangs.
const { page, shots, t0, log, problems, check, api: apiGet, enterKey, finish } = await open({
  name: 'the browser test', base, key, seconds: 120,
  shots: process.env.SCREENSHOT_DIR || path.resolve(here, '../../../.data/screenshots'),
  // Not the locale of the machine or of en-GB: dates must follow it.
  options: { locale: locale.name, timezoneId: locale.timeZone },
  // The sources route answers 404 on a server that does not have it, and the
  // dashboard hides the panel then; the browser logs the 404 all the same.
  ignore: (m) => /sources\?tree=true|404 \(Not Found\)|501 \(Not Implemented\)/.test(m.text() + (m.location().url || '')),
});
// requests records the API requests the page makes: method and URL.
const requests = [];
page.on('request', (r) => { if (r.url().includes('/v1/')) requests.push({ method: r.method(), url: new URL(r.url()) }); });
// dialogs counts the confirm dialogs the page opened; each is dismissed.
let dialogs = 0;
page.on('dialog', (d) => { dialogs++; d.dismiss().catch(() => {}); });
await page.addInitScript(() => {
  window.__csp = [];
  document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
});

await finish(process.env.E2E_ASK === '1' ? runAsk : process.env.E2E_PLAN === '1' ? runPlan : run, 'failure.png');

// signIn opens the dashboard, checks its headers, is refused with a wrong
// key and signs in with the right one, kept in the session only.
async function signIn() {
  // The page and its headers.
  const resp = await page.goto(base + '/ui');
  check(page.url() === base + '/ui/index.html', '/ui redirects to /ui/index.html');
  const csp = resp.headers()['content-security-policy'] || '';
  check(/script-src 'self'/.test(csp) && !/unsafe-inline/.test(csp) && /frame-ancestors 'none'/.test(csp),
    'the page has a Content-Security-Policy without inline scripts: ' + csp);
  check(resp.headers()['x-content-type-options'] === 'nosniff', 'X-Content-Type-Options: nosniff');

  // Sign in: a wrong key is refused, the right one is kept in the session only.
  await page.fill('#api-key', 'gb_not_a_key');
  await page.click('#sign-in button[type=submit]');
  await page.waitForSelector('#sign-in-note.error');
  check(/not valid/.test(await page.textContent('#sign-in-note')), 'a wrong key is refused');
  // The browser logs the refused request; it was meant to be refused.
  for (let i = problems.length - 1; i >= 0; i--) if (/status of 401/.test(problems[i])) problems.splice(i, 1);
  await enterKey();
  const stored = await page.evaluate(() => ({ session: sessionStorage.getItem('gb.apiKey'), local: localStorage.length, cookie: document.cookie }));
  check(stored.session === key && stored.local === 0 && stored.cookie === '', 'the key is in sessionStorage only');
  await page.screenshot({ path: path.join(shots, 'runs.png') });
}

async function run() {
  await signIn();

  // Start the demo research.
  await page.fill('#topic', demoTopic);
  await page.click('#start button[type=submit]');
  await page.waitForURL(/#\/runs\/\d+$/);
  const rootID = Number(/#\/runs\/(\d+)$/.exec(page.url())[1]);
  console.log('started run ' + rootID);
  await page.waitForSelector(`#tree-table tr[data-run-id="${rootID}"]`);

  // Watch the tree: it grows to the root and three sub-agents, and every
  // one of them ends succeeded, with no reload of the page.
  const seen = { counts: new Set(), unended: false, working: false };
  let tree = [];
  let shotWorking = false;
  // While the tree works, its Cancel button is pressed the way a person
  // presses it (down, a pause, up) while the page refreshes around it, and
  // the confirm each press opens is dismissed.
  await page.waitForSelector('#cancel:visible');
  await page.evaluate(() => { window.__cancel = document.querySelector('#cancel'); });
  let presses = 0;
  let confirmed = 0;
  let released = false;
  for (;;) {
    tree = await page.$$eval('#tree-table tbody tr', (rows) => rows.map((r) => ({
      id: Number(r.dataset.runId), status: r.dataset.status, depth: Number(r.dataset.depth),
      name: r.querySelector('.run-link').textContent,
      cells: Array.from(r.cells).map((c) => c.textContent),
    })));
    seen.counts.add(tree.length);
    // The test holds the model until the page has seen the tree once, so
    // that the tree grows while it is watched; this lets it go on.
    if (!released) {
      released = true;
      const res = await fetch(base + '/e2e/release', { method: 'POST' });
      check(res.status === 204, 'the model was released once the root was seen alone: ' + res.status);
    }
    if (tree.some((r) => r.status !== 'succeeded' && r.status !== 'failed')) seen.unended = true;
    if (tree.length >= 4 && tree.some((r) => r.depth > 0 && r.status === 'working') && !shotWorking) {
      shotWorking = true;
      await page.screenshot({ path: path.join(shots, 'run-working.png'), fullPage: true });
    }
    if (tree.length >= 4 && tree.every((r) => r.status === 'succeeded')) break;
    if (tree.some((r) => r.status === 'failed')) throw new Error('a run failed: ' + JSON.stringify(tree));
    if (Date.now() - t0 > 60_000) throw new Error('the tree did not finish: ' + JSON.stringify(tree));
    if (presses < 5 && await page.isVisible('#cancel')) {
      const box = await page.locator('#cancel').boundingBox();
      if (box) {
        const before = dialogs;
        await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
        await page.mouse.down();
        await page.waitForTimeout(120);
        await page.mouse.up();
        await page.evaluate(() => 0);
        // A press the tree's end hid the button under does not count.
        if (await page.isVisible('#cancel')) {
          presses++;
          confirmed += dialogs - before;
        }
      }
    }
    await page.waitForTimeout(100);
  }
  check(seen.unended, 'the tree was seen working before it ended');
  await page.waitForSelector('#live.ended');
  const streamed = requests.filter((r) => r.url.pathname.endsWith(`/research/${rootID}/events/stream`));
  const polled = requests.filter((r) => r.url.pathname.endsWith(`/research/${rootID}/events`) && r.url.searchParams.get('wait') > 0);
  check(streamed.length > 0 && polled.length === 0,
    `the run's page followed its tree by the event stream (${streamed.length} streams), not by long polls (${polled.length})`);
  const cancel = await page.evaluate(() => ({
    same: document.querySelector('#cancel') === window.__cancel,
    shown: document.querySelector('#cancel')?.checkVisibility() ?? false,
  }));
  check(presses > 0 && confirmed === presses, `each press of Cancel asked to confirm: ${presses} presses, ${confirmed} dialogs`);
  check(cancel.same, 'the Cancel button stayed the same element while the page refreshed');
  check(!cancel.shown, 'the Cancel button is gone once the tree has ended');
  check(seen.counts.size > 1 || !seen.counts.has(4), 'the tree grew while watched: row counts ' + [...seen.counts].join(', '));
  check(tree.length === 4 && tree[0].id === rootID && tree.slice(1).every((r) => r.depth === 1),
    'the tree is the root and three sub-agents, nested under it');
  const kid = tree[1];
  check(/^\d+\/\d+$/.test(kid.cells[4]) && /\$\d\.\d{4}/.test(kid.cells[7]) && kid.cells[1].length > 0,
    'tree rows show reason, steps/max and cost: ' + JSON.stringify(kid.cells));
  check(/^[\d,]+$/.test(kid.cells[5]) && kid.cells[6] === '0',
    'tree rows show tokens, no reasoning, and 0 cached for a model without a cache: ' + JSON.stringify(kid.cells));
  const headers = await page.$$eval('#tree-table thead th', (ths) => ths.map((th) => th.textContent));
  check(headers[5] === 'Tokens' && headers[6] === 'Cached', 'the tree has a Cached column beside Tokens: ' + headers.join(', '));

  // The report, the timeline and the messages of the finished tree.
  await page.waitForSelector('#report-body h1');
  check(/Report/.test(await page.textContent('#report-body h1')), 'the root report is rendered from Markdown');
  const links = await page.$$eval('#report-body a', (as) => as.map((a) => a.href));
  check(links.length > 0 && links.every((h) => /^https?:/.test(h)), 'the report links its sources over http(s): ' + links.length);
  await page.waitForSelector('#live.ended');
  const kinds = await page.$$eval('#events-body tr', (rows) => rows.map((r) => r.dataset.kind));
  check(kinds.includes('spawned') && kinds.includes('completed') && kinds.includes('step'),
    'the timeline holds spawned, step and completed events: ' + kinds.length);
  const seqs = await page.$$eval('#events-body tr', (rows) => rows.map((r) => Number(r.dataset.seq)));
  check(seqs.every((s, i) => i === 0 || s > seqs[i - 1]), 'events are in order, each once');
  await checkEventNumbers(rootID);
  await checkPlurals('the page of the demo\'s tree');
  const msgs = await page.$$eval('#messages-body li', (ls) => ls.length);
  check(msgs > 0, 'the messages between sub-agents are shown: ' + msgs);
  const sourcesShown = await page.isVisible('#sources');
  log(sourcesShown ? 'sources panel shown: ' + (await page.$$eval('#sources-body tbody tr', (r) => r.length)) + ' rows'
    : 'sources panel hidden (the route answered 404)');
  if (sourcesShown) await checkSources(rootID);
  await checkDates(rootID);
  await page.screenshot({ path: path.join(shots, 'run-page.png'), fullPage: true });

  // Open a sub-agent from the tree.
  await page.click(`#tree-table tr[data-run-id="${kid.id}"] a.run-link`);
  await page.waitForURL(new RegExp(`#/runs/${kid.id}$`));
  await page.waitForFunction((name) => document.querySelector('#run-title')?.textContent.includes(name), kid.name);
  check(/Sub-agent of #/.test(await page.textContent('.lineage')), 'the sub-agent page names its parent');
  await page.waitForSelector('#report-body li');
  const kidReport = await page.textContent('#report-body');
  check(kidReport.length > 100, 'the sub-agent report is shown');
  check(await page.isVisible(`#tree-table tr.current[data-run-id="${kid.id}"]`), 'the tree marks the open sub-agent');
  await page.waitForSelector('#live.ended');
  check(await page.$$eval('#events-body tr', (rows) => rows.length) === kinds.length, 'the sub-agent page shows the tree\'s timeline');
  await page.screenshot({ path: path.join(shots, 'subagent.png'), fullPage: true });

  // The list of runs, newest first, without their reports.
  const listed = page.waitForResponse((r) => new URL(r.url()).pathname.endsWith('/v1/gb/research') && r.request().method() === 'GET');
  await page.click('#nav a[href="#/"]');
  await page.waitForSelector(`#runs-body tr[data-run-id="${rootID}"]`);
  const list = await (await listed).json();
  check(list.runs.length >= 4 && list.runs.every((r) => !('report' in r)),
    'the list of runs comes without reports: ' + (await (await listed).body()).length + ' bytes for ' + list.runs.length + ' runs');
  const ids = await page.$$eval('#runs-body tr', (rows) => rows.map((r) => Number(r.dataset.runId)));
  check(ids.length >= 4 && ids.every((id, i) => i === 0 || id < ids[i - 1]), 'runs are listed newest first: ' + ids.join(','));
  check(await page.getAttribute(`#runs-body tr[data-run-id="${rootID}"]`, 'data-status') === 'succeeded', 'the list shows the research succeeded');

  await checkMarkdown();
  if (xssRun) await checkMarkupIsText(Number(xssRun));
  if (timedOutRun) await checkTimedOut(Number(timedOutRun));
  await signOut();
}

// runAsk signs in, answers the question of an interactive research in the
// page (checkAskOwner) and signs out.
async function runAsk() {
  await signIn();
  await checkAskOwner();
  await signOut();
}

async function runPlan() {
  await signIn();
  await checkPlanApproval();
  await signOut();
}

// signOut signs out: the key leaves the session.
async function signOut() {
  await page.click('#sign-out');
  await page.waitForSelector('#sign-in');
  check(await page.evaluate(() => sessionStorage.getItem('gb.apiKey')) === null, 'signing out forgets the key');
}

// checkAskOwner starts an interactive research from the form; its root
// (the test's asking model) asks a question, which the run's page shows
// with an answer box and the timeline records; the answer typed there
// resumes it, the box goes away and the report holds the answer.
async function checkAskOwner() {
  const question = 'Which Go version should the research cover?';
  const answer = 'Go 1.26, and nothing older';
  await page.click('#nav a[href="#/"]');
  await page.waitForSelector('#start');
  await page.fill('#topic', 'How should we pick a Go version?');
  await page.check('#interactive');
  await page.click('#start button[type=submit]');
  await page.waitForURL(/#\/runs\/\d+$/);
  const id = Number(/#\/runs\/(\d+)$/.exec(page.url())[1]);
  console.log('asked run ' + id);
  await page.waitForSelector('#ask:not(.hidden) #ask-question');
  check(await page.textContent('#ask-question') === question, 'the run shows the question it asks');
  check(/^Answer by .+ goes on with its best judgement\.$/.test(await page.textContent('#ask-deadline')),
    'the run shows when it goes on without an answer: ' + await page.textContent('#ask-deadline'));
  await page.waitForSelector('#events-body tr[data-kind="input_required"]');
  check((await page.textContent('#events-body tr[data-kind="input_required"] td.detail')).startsWith(question),
    'the timeline shows the question');
  check(await page.textContent('#run-head dd[data-fact="state"]') === 'input_required', 'the run is in state input_required');
  // The drawn timeline's park says what the run asked.
  const parkTitle = () => page.$$eval('#timeline-body line.tl-park title', (ts) => ts.map((t) => t.textContent));
  await page.waitForFunction((q) => Array.from(document.querySelectorAll('#timeline-body line.tl-park title')).some((t) => t.textContent.includes(q)), question);
  check((await parkTitle()).some((t) => t.startsWith('asked its owner: ' + question)), 'the drawn timeline\'s park shows the question: ' + JSON.stringify(await parkTitle()));
  // And under the drawing, as text one reads without pointing at the park.
  const asks = () => page.$$eval('#timeline-asks li', (lis) => lis.map((li) => ({
    question: li.querySelector('.tl-question').textContent, answer: li.querySelector('.tl-answer').textContent })));
  check(JSON.stringify(await asks()) === JSON.stringify([{ question, answer: 'waiting for the answer' }]),
    'the parked run\'s timeline lists the question it asked, waiting for the answer: ' + JSON.stringify(await asks()));
  await checkPlurals('the page of a run waiting for its owner');
  await page.screenshot({ path: path.join(shots, 'ask.png'), fullPage: true });
  await checkListFollows(id);
  await page.fill('#answer', answer);
  await page.click('#ask-form button[type=submit]');
  await page.waitForSelector('#ask.hidden', { state: 'attached' });
  await page.waitForSelector('#live.ended');
  await page.waitForFunction((a) => document.querySelector('#report-body')?.textContent.includes(a), answer);
  check((await page.textContent('#report-body h1')) === 'Answered', 'the report written after the answer is shown');
  const answered = await page.$$eval('#events-body tr[data-kind="answered"] td.detail', (tds) => tds.map((td) => td.textContent));
  check(answered.length === 1 && answered[0] === 'by its owner: ' + answer, 'the timeline shows the answer once: ' + JSON.stringify(answered));
  await page.waitForFunction((a) => Array.from(document.querySelectorAll('#timeline-body line.tl-park title')).some((t) => t.textContent.includes(a)), answer);
  check((await parkTitle()).some((t) => t === 'asked its owner: ' + question + '\nanswered: ' + answer),
    'the drawn timeline\'s park shows the question and its answer: ' + JSON.stringify(await parkTitle()));
  await page.waitForFunction(() => document.querySelector('#timeline-asks .tl-answer')?.textContent.startsWith('answered: '));
  check(JSON.stringify(await asks()) === JSON.stringify([{ question, answer: 'answered: ' + answer }]),
    'once answered, the timeline lists the question with its answer: ' + JSON.stringify(await asks()));
  await page.screenshot({ path: path.join(shots, 'answered.png'), fullPage: true });
}

// checkPlanApproval starts a research that must have its plan approved
// from the form; its root (the test's model) proposes one sub-agent, which
// the run's page shows with approve and reject buttons and the timeline
// records; the approve button with a note resumes it, the panel goes away
// and the report holds the approval.
async function checkPlanApproval() {
  await page.click('#nav a[href="#/"]');
  await page.waitForSelector('#start');
  await page.fill('#topic', "Compare Go's HTTP routers");
  await page.check('#approve-plan');
  await page.click('#start button[type=submit]');
  await page.waitForURL(/#\/runs\/\d+$/);
  const id = Number(/#\/runs\/(\d+)$/.exec(page.url())[1]);
  console.log('planned run ' + id);
  await page.waitForSelector('#plan:not(.hidden) #plan-subagents');
  const names = await page.$$eval('#plan-subagents tbody td.name', (tds) => tds.map((td) => td.textContent));
  check(names.length === 1 && names[0] === 'routers', 'the run shows the sub-agents it proposes: ' + JSON.stringify(names));
  check(/^Decide by .+ goes on without sub-agents\./.test(await page.textContent('#plan-deadline')),
    'the run shows when it goes on without a decision: ' + await page.textContent('#plan-deadline'));
  await page.waitForSelector('#events-body tr[data-kind="plan_proposed"]');
  check((await page.textContent('#events-body tr[data-kind="plan_proposed"] td.detail')).startsWith('routers'),
    'the timeline shows the proposal');
  await page.screenshot({ path: path.join(shots, 'plan.png'), fullPage: true });
  await page.fill('#plan-note', 'keep it short');
  await page.click('#plan-approve');
  await page.waitForSelector('#plan.hidden', { state: 'attached' });
  await page.waitForSelector('#live.ended');
  await page.waitForFunction(() => document.querySelector('#report-body')?.textContent.includes('keep it short'));
  check((await page.textContent('#report-body h1')) === 'Planned', 'the report written after the decision is shown');
  const decided = await page.$$eval('#events-body tr[data-kind="plan_decided"] td.detail', (tds) => tds.map((td) => td.textContent));
  check(decided.length === 1 && decided[0] === 'approved by its owner', 'the timeline shows the decision once: ' + JSON.stringify(decided));
  await page.screenshot({ path: path.join(shots, 'planned.png'), fullPage: true });
}

// checkEventNumbers checks the # column of the events of tree rootID: the
// event's number in its tree (the API's n, which gb research events
// prints), from 1, not its seq.
async function checkEventNumbers(rootID) {
  const rows = await page.$$eval('#events-body tr', (rs) => rs.map((r) => ({ seq: Number(r.dataset.seq), cell: r.cells[0].textContent })));
  const n = new Map((await apiGet('/v1/gb/research/' + rootID + '/events?after=0')).events.map((e) => [e.seq, e.n]));
  check(rows.length > 1 && rows.every((r, i) => r.cell === String(i + 1)),
    'the # column numbers the tree\'s events 1 to ' + rows.length + ': ' + rows.slice(0, 3).map((r) => r.cell).join(', ') + ', …');
  check(rows.every((r) => String(n.get(r.seq)) === r.cell) && rows.some((r) => String(r.seq) !== r.cell),
    'each event\'s number is the API\'s n, not its seq (first seq ' + rows[0].seq + ')');
}

// sourceCells are the kind, status and size cells of the sources table.
function sourceCells() {
  return page.$$eval('#sources-table tbody tr', (rs) => rs.map((r) => ({
    kind: r.dataset.kind, status: r.cells[4].textContent, size: r.cells[5].textContent,
  })));
}

// checkSources checks the sources of tree id as the page lists them: one
// row per source of the API, a fetch's HTTP status and a size where there
// is one, and no 0 shown for what a search result does not have.
async function checkSources(id) {
  const rows = await sourceCells();
  const api = (await apiGet('/v1/gb/research/' + id + '/sources?tree=true')).sources;
  check(rows.length === api.length, `the sources table has a row per source: ${rows.length} rows, ${api.length} sources (` +
    [...new Set(api.map((s) => s.kind))].join(', ') + ')');
  check(rows.every((r, i) => r.kind === api[i].kind && (r.kind !== 'fetch' || r.status.startsWith(String(api[i].status)))),
    'each fetch shows its HTTP status');
  check(rows.every((r) => r.status !== '0' && r.size !== '0'), 'no source shows 0 for a status or size it does not have');
  check(rows.every((r, i) => api[i].kind !== 'kb' || r.size === api[i].bytes.toLocaleString('en-US') + ' chars'),
    'a document read from the knowledge base shows its size in characters');
}

// checkDates checks that run id's creation time and its events' times are
// written in the browser's locale (de-DE), not in en-GB.
async function checkDates(id) {
  const run = await apiGet('/v1/gb/research/' + id);
  const created = await page.textContent('#run-head dd[data-fact="created"]');
  const enGB = new Date(run.created_at).toLocaleString('en-GB', { timeZone: locale.timeZone, hour12: false });
  check(created === localDateTime(run.created_at) && created !== enGB,
    `the run's creation time is written the ${locale.name} way: ${created} (en-GB: ${enGB})`);
  const first = (await apiGet('/v1/gb/research/' + id + '/events?after=0')).events[0];
  const title = await page.getAttribute(`#events-body tr[data-seq="${first.seq}"] td:nth-child(2)`, 'title');
  check(title === localDateTime(first.at), 'an event\'s date is written the ' + locale.name + ' way: ' + title);
}

// checkSourcesOf checks the sources given to run id by the Go test: a page
// fetched, the same page served from the tree's cache, a page answered
// 404, and a search result.
async function checkSourcesOf(id) {
  await page.waitForSelector('#sources-table');
  // The run's own reads of the knowledge base come with them.
  const rows = (await sourceCells()).filter((r) => r.kind !== 'kb');
  const want = [
    { kind: 'fetch', status: '200', size: '51.2 kB' },
    { kind: 'fetch', status: '200 · cached', size: '51.2 kB' },
    { kind: 'fetch', status: '404 · HTTP 404 Not Found', size: '1.3 kB' },
    { kind: 'result', status: '', size: '' },
  ];
  check(JSON.stringify(rows) === JSON.stringify(want), 'sources show their status and size: ' + JSON.stringify(rows));
  await checkSources(id);
}

// checkTimedOut opens a run that timed out: the page treats it as ended
// (no Cancel button, no long poll, no promise of a report), and the runs
// list, where every run has now ended, is not read again on a timer.
async function checkTimedOut(id) {
  const from = requests.length;
  await page.goto(base + '/ui/#/runs/' + id);
  await page.waitForSelector('#run-head dd[data-fact="status"] .badge.s-timed_out');
  await page.waitForSelector('#live.ended');
  check(!(await page.isVisible('#cancel')), 'a timed-out run has no Cancel button');
  check(await page.textContent('#report-body') === 'This agent wrote no report.', 'a timed-out run without a report says it wrote none');
  // Its event stream ends at once (the tree has ended); a long poll, were
  // there one, would not wait.
  const reads = requests.slice(from).filter((r) => r.url.pathname.endsWith(`/research/${id}/events`) ||
    r.url.pathname.endsWith(`/research/${id}/events/stream`));
  check(reads.length > 0 && reads.every((r) => r.url.pathname.endsWith('/stream') || (r.url.searchParams.get('wait') || '0') === '0'),
    'the events of a timed-out tree are read without a long poll: ' + reads.map((r) => r.url.pathname + r.url.search).join(' '));
  await page.screenshot({ path: path.join(shots, 'timed-out.png'), fullPage: true });

  await page.click('#nav a[href="#/"]');
  await page.waitForSelector(`#runs-body tr[data-run-id="${id}"][data-status="timed_out"]`);
  check(await page.getAttribute('#runs', 'data-watching') === '', 'the list watches no tree when every run has ended, timed_out included');
  const at = requests.length;
  await page.waitForTimeout(4000);
  const later = requests.slice(at).map((r) => r.url.pathname + r.url.search);
  check(later.length === 0, 'the list is not read again while nothing works: ' + (later.join(' ') || 'no request in 4 s'));
}

// checkListFollows opens the list while run id waits for its owner: the
// list long-polls the run's tree rather than reading the list again, and
// reads it again only when the tree has news. It goes back to the run.
async function checkListFollows(id) {
  const from = requests.length;
  await page.click('#nav a[href="#/"]');
  await page.waitForSelector(`#runs-body tr[data-run-id="${id}"]`);
  await page.waitForSelector(`#runs[data-watching~="${id}"]`);
  const longPoll = (r) => r.url.pathname.endsWith(`/research/${id}/events`) && Number(r.url.searchParams.get('wait')) > 0;
  for (let i = 0; i < 100 && !requests.slice(from).some(longPoll); i++) await page.waitForTimeout(100);
  check(requests.slice(from).some(longPoll), 'the list long-polls the events of the working run\'s tree');
  // Once it has the tree's cursor, the list is read once more (the tree
  // may have changed since the first read); then only news reads it.
  await page.waitForTimeout(1000);
  const at = requests.length;
  await page.waitForTimeout(3000);
  const reads = requests.slice(at).filter((r) => r.url.pathname.endsWith('/v1/gb/research'));
  check(reads.length === 0, `the list is not read again while its working run has no news: ${reads.length} reads in 3 s`);
  await page.screenshot({ path: path.join(shots, 'runs-working.png'), fullPage: true });
  await page.click(`#runs-body a[href="#/runs/${id}"]`);
  await page.waitForSelector('#ask:not(.hidden) #ask-question');
}

// checkMarkupIsText opens a run whose topic and report hold <script>,
// <img onerror> and javascript: links, and checks they show as text and
// that nothing ran.
async function checkMarkupIsText(id) {
  await page.goto(base + '/ui/#/runs/' + id);
  await page.waitForSelector('#report-body h1');
  await page.waitForSelector('#live.ended');
  const r = await page.evaluate(() => {
    const report = document.querySelector('#report-body');
    return {
      text: report.textContent,
      topic: document.querySelector('#run-topic').textContent,
      elements: document.querySelectorAll('#report-body script, #report-body img, #report-body b, #run-head img').length,
      images: document.images.length,
      scripts: Array.from(document.scripts).map((s) => s.src),
      hrefs: Array.from(document.querySelectorAll('a')).map((a) => a.getAttribute('href')),
      xss: window.__xss,
      csp: window.__csp,
      bold: report.querySelectorAll('strong').length,
    };
  });
  check(r.text.includes("<script>window.__xss = 'script'</script>"), 'a <script> in the report shows as text');
  check(r.text.includes(`<img src=x onerror="window.__xss = 'img'">`), 'an <img onerror> in the report shows as text');
  check(r.topic.includes(`<img src=x onerror="window.__xss='topic'">`), 'markup in the topic shows as text');
  check(r.elements === 0 && r.images === 0, 'no element was made from the markup');
  check(r.scripts.every((s) => s.endsWith('/ui/js/app.js')), 'the only script is the dashboard: ' + r.scripts.join(' '));
  check(!r.hrefs.some((h) => /^\s*javascript:/i.test(h || '')), 'no javascript: link');
  check(r.xss === undefined && r.csp.length === 0, 'nothing ran and nothing was blocked: ' + JSON.stringify([r.xss, r.csp]));
  check(r.bold === 1, 'Markdown around the markup still renders');
  await page.screenshot({ path: path.join(shots, 'xss.png'), fullPage: true });
  await checkSourcesOf(id);
  await checkUsage(id);
}

// checkUsage checks that the usage of run id (1234 cached and 567
// reasoning tokens, one call settled at its estimate) shows in its head,
// its tree row and totals, and the list of runs.
async function checkUsage(id) {
  const fact = (name) => page.$eval(`#run-head dd[data-fact="${name}"]`, (dd) => dd.textContent).catch(() => null);
  check(await fact('cached') === '1,234', 'the run shows its cached tokens');
  check(await fact('reasoning') === '567', 'the run shows its reasoning tokens');
  const treeFact = await fact('tree');
  check(/\(1,234 cached, 567 reasoning\)/.test(treeFact) && /1 call at its estimate/.test(treeFact),
    'the tree fact shows cached and reasoning tokens and the estimated call: ' + treeFact);
  const cells = (sel) => page.$eval(sel, (tr) => Array.from(tr.cells).map((c) => c.textContent));
  const row = await cells(`#tree-table tbody tr[data-run-id="${id}"]`);
  check(/567 reasoning$/.test(row[5]) && row[6] === '1,234', 'the tree row shows reasoning under tokens and cached: ' + JSON.stringify(row));
  const foot = await cells('#tree-table tfoot tr');
  check(foot[6] === '1,234' && foot[8] === '1 call at its estimate', 'the tree totals show cached tokens and the estimated call: ' + JSON.stringify(foot));
  check(foot[0] === '1 agent' && /^1 agent, /.test(treeFact), 'one agent is "1 agent": ' + foot[0] + ' · ' + treeFact);
  await checkPlurals('the page of a tree of one agent');
  await checkLayout(id);
  await page.click('#nav a[href="#/"]');
  await page.waitForSelector(`#runs-body tr[data-run-id="${id}"]`);
  const listed = await cells(`#runs-body tr[data-run-id="${id}"]`);
  check(/567 reasoning$/.test(listed[6]) && listed[7] === '1,234', 'the list shows the run\'s reasoning and cached tokens: ' + JSON.stringify(listed));
}

// checkLayout checks the run's page at 1280 and at 400 px wide: each
// fact's label stands right above its value, in the same column, and the
// tree table scrolls sideways in its box, so its last column can be
// brought into view rather than being cut off, no cell lies outside what
// the box scrolls over, and nothing makes the page itself wider than the
// screen. A screenshot of the page, of the run's head (facts-WIDTH.png)
// and, at 400 px, of the tree (tree-400.png).
async function checkLayout(id) {
  const size = page.viewportSize();
  for (const width of [1280, 400]) {
    await page.setViewportSize({ width, height: 900 });
    await page.waitForSelector(`#tree-table tbody tr[data-run-id="${id}"]`);
    // Read in one task of the page (document.querySelector), not through
    // a handle found first: a refresh may replace the elements between.
    const apart = await page.evaluate(() => Array.from(document.querySelectorAll('#run-head dl.facts dd')).map((dd) => {
      const dt = dd.previousElementSibling;
      const a = dt.getBoundingClientRect();
      const b = dd.getBoundingClientRect();
      return { label: dt.textContent, ok: dt.tagName === 'DT' && Math.abs(a.left - b.left) < 2 && a.bottom <= b.top + 1 && b.top - a.bottom < 8 };
    }).filter((f) => !f.ok).map((f) => f.label));
    check(apart.length === 0, `at ${width} px every fact's label stands above its value: apart ${JSON.stringify(apart)}`);
    const scroll = await page.evaluate(() => {
      const box = document.querySelector('#tree-scroll');
      const last = box.querySelector('#tree-table thead th:last-child');
      box.scrollLeft = box.scrollWidth;
      const r = last.getBoundingClientRect();
      const b = box.getBoundingClientRect();
      return { overflow: getComputedStyle(box).overflowX, wide: box.scrollWidth > box.clientWidth,
        reached: r.right <= b.right + 1 && r.left >= b.left - 1, page: document.documentElement.scrollWidth <= window.innerWidth,
        cut: Array.from(box.querySelectorAll('th, td')).filter((c) => {
          const cr = c.getBoundingClientRect();
          return cr.left < b.left - box.scrollLeft - 1 || cr.right > b.left - box.scrollLeft + box.scrollWidth + 1;
        }).length,
        wider: Array.from(document.querySelectorAll('body *')).filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 &&
          !e.closest('.panel')).slice(0, 5).map((e) => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className) };
    });
    check(scroll.overflow === 'auto' && scroll.reached && scroll.page && scroll.cut === 0 && (width > 1000 || scroll.wide),
      `at ${width} px the tree table scrolls in its box and its last column can be reached: ${JSON.stringify(scroll)}`);
    await page.evaluate(() => { document.querySelector('#tree-scroll').scrollLeft = 0; });
    await page.screenshot({ path: path.join(shots, `run-${width}px.png`), fullPage: true });
    await page.locator('#run-head').screenshot({ path: path.join(shots, `facts-${width}.png`) });
    if (width === 400) await page.locator('#tree').screenshot({ path: path.join(shots, 'tree-400.png') });
  }
  await page.setViewportSize(size);
}

// checkPlurals checks that nothing on the page, its drawn timeline and its
// tooltips included, writes one thing in the plural, and that the
// dashboard's counts write one in the singular and more in the plural.
async function checkPlurals(where) {
  // A count of one written in the plural: "1 agents".
  const plurals = /(^|[^\d.,])1 (agents|steps|tokens|events|sources|calls|tries|retries|claims|runs)\b/;
  const found = await page.evaluate((re) => {
    const texts = [document.body.innerText, ...Array.from(document.querySelectorAll('[title]')).map((e) => e.title),
      ...Array.from(document.querySelectorAll('svg title, svg text')).map((e) => e.textContent)];
    return texts.filter((t) => new RegExp(re).test(t)).map((t) => t.match(new RegExp(re))[0]);
  }, plurals.source);
  check(found.length === 0, where + ' writes no count of one in the plural: ' + JSON.stringify(found));
  const written = await page.evaluate(async () => {
    const { count } = await import('./js/format.js');
    const { eventRow } = await import('./js/panels.js');
    const detail = (kind, data) => eventRow({ seq: 1, n: 1, run_id: 1, kind, data, at: '' }, new Map()).cells[4].textContent;
    return [count(1, 'agent'), count(2, 'agent'), count(1, 'retry', 'retries'), count(1234, 'token'),
      detail('step', { step: 1, tools: [], tokens: 1 }), detail('completed', { steps: 1 }),
      detail('provider_recovered', { provider: 'openai', waited_seconds: 3, tries: 1 })];
  });
  check(JSON.stringify(written) === JSON.stringify(['1 agent', '2 agents', '1 retry', '1,234 tokens', 'step 1 → answer · 1 token', '1 step',
    'openai answered again after 3 s (1 try)']), 'counts write one in the singular: ' + JSON.stringify(written));
}

// checkMarkdown renders Markdown cases with the dashboard's own renderer,
// in the page, and compares the DOM it built (serialized) with what is
// expected.
async function checkMarkdown() {
  const a = (href, text, title) => `<a href="${href}"${title ? ` title="${title}"` : ''} target="_blank" rel="noopener noreferrer nofollow">${text}</a>`;
  const cases = [
    ['## Title *here*', '<h2>Title <em>here</em></h2>'],
    ['**bold**, _em_ and snake_case_name', '<p><strong>bold</strong>, <em>em</em> and snake_case_name</p>'],
    // Links to anything but http(s) and mailto stay the text they were written as.
    ['[x](javascript:alert(1)) [d](data:text/html,hi) [r](/v1/gb/keys) [ok](https://go.dev/doc)',
      '<p>[x](javascript:alert(1)) [d](data:text/html,hi) [r](/v1/gb/keys) ' + a('https://go.dev/doc', 'ok') + '</p>'],
    ['(see https://pkg.go.dev/sync). go.dev is not a link', '<p>(see ' + a('https://pkg.go.dev/sync', 'https://pkg.go.dev/sync') + '). go.dev is not a link</p>'],
    ['- a\n  - b\n- c', '<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>'],
    ['1. one\n2. two `<b>`', '<ol><li>one</li><li>two <code>&lt;b&gt;</code></li></ol>'],
    ['3. three\n4. four', '<ol start="3"><li>three</li><li>four</li></ol>'],
    ['```go\n<script>x()</script>\n```', '<pre><code class="language-go">&lt;script&gt;x()&lt;/script&gt;</code></pre>'],
    ['> quoted <i>\n\n---', '<blockquote><p>quoted &lt;i&gt;</p></blockquote><hr>'],
    ['[1] a — https://a.example/x\n[2] b', '<p>[1] a — ' + a('https://a.example/x', 'https://a.example/x') + '<br>[2] b</p>'],
    // Raw HTML is text, a block of it too.
    ['<div onclick="x()">\n<script>alert(1)</script>\n</div>', '<p>&lt;div onclick="x()"&gt;<br>&lt;script&gt;alert(1)&lt;/script&gt;<br>&lt;/div&gt;</p>'],
    // A table, with its columns' alignment as classes.
    ['| Package | Lines |\n|:--|--:|\n| `sync` | 1,024 |\n| context | 512 |',
      '<table><thead><tr><th class="align-left">Package</th><th class="align-right">Lines</th></tr></thead>' +
      '<tbody><tr><td class="align-left"><code>sync</code></td><td class="align-right">1,024</td></tr>' +
      '<tr><td class="align-left">context</td><td class="align-right">512</td></tr></tbody></table>'],
    // Reference links and entities are resolved.
    ['See [the spec][spec] &amp; [mail](mailto:go@example.org) &copy; &#60;b&#62;\n\n[spec]: https://go.dev/ref/spec "The Go spec"',
      '<p>See ' + a('https://go.dev/ref/spec', 'the spec', 'The Go spec') + ' &amp; ' + a('mailto:go@example.org', 'mail') + ' © &lt;b&gt;</p>'],
    ['***both*** and ~~gone~~', '<p><em><strong>both</strong></em> and <s>gone</s></p>'],
    // An image is a link to it, never an image.
    ['![a chart](https://x.example/c.png) ![bad](javascript:x)',
      '<p><a href="https://x.example/c.png" target="_blank" rel="noopener noreferrer nofollow" class="image-link">a chart</a> ![bad](javascript:x)</p>'],
  ];
  const got = await page.evaluate(async (cases) => {
    const { renderMarkdown } = await import('./js/markdown.js');
    return cases.map(([md]) => {
      const div = document.createElement('div');
      div.append(renderMarkdown(md));
      return div.innerHTML;
    });
  }, cases);
  cases.forEach(([md, want], i) => check(got[i] === want, 'Markdown ' + JSON.stringify(md) + ' renders as ' + want + (got[i] === want ? '' : ', got ' + got[i])));
}
