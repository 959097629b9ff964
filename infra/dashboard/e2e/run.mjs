// The dashboard's browser test: drives Debian's chromium through
// playwright-core against a running stack.
//
//   node e2e/run.mjs BASE_URL API_KEY [XSS_RUN_ID]
//   E2E_ASK=1 node e2e/run.mjs BASE_URL API_KEY
//   E2E_PLAN=1 node e2e/run.mjs BASE_URL API_KEY
//
// It signs in, starts the demo research, watches the tree grow to its
// sub-agents and finish, opens a sub-agent and reads its report, lists the
// runs, and, given XSS_RUN_ID (a run whose topic and report hold markup,
// with 1234 cached and 567 reasoning tokens and one model call settled at
// its estimate), checks that the markup shows as text and runs nothing and
// that its usage shows. Screenshots go to
// $SCREENSHOT_DIR (default: .data/screenshots at the top of the repository).
// With E2E_ASK=1 it signs in, starts an interactive research that asks its
// owner a question, and answers it in the run page's answer box instead.
// With E2E_PLAN=1 it starts a research that proposes its sub-agents, and
// approves its plan with the run page's approve button ("planned run N").
// It prints "started run N" (or "asked run N") and exits 0 when every
// check passes.
import { chromium } from 'playwright-core';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The demo topic of `gb demo` (cmd/gb/demo.go): three parts, so the
// offline policy spawns three sub-agents.
const demoTopic = 'How do goroutines and channels synchronize work, and how does the context package carry ' +
  'cancellation and deadlines, and how does net/http serve HTTP requests?';

const [base, key, xssRun] = process.argv.slice(2);
if (!base || !key) {
  console.error('usage: node e2e/run.mjs BASE_URL API_KEY [XSS_RUN_ID]');
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const shots = process.env.SCREENSHOT_DIR || path.resolve(here, '../../../.data/screenshots');
mkdirSync(shots, { recursive: true });
const t0 = Date.now();
const log = (...a) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);

// The whole run is bounded, whatever hangs.
const deadline = setTimeout(() => { console.error('browser test took over 90 s'); process.exit(1); }, 90_000);

function check(ok, what) {
  if (!ok) throw new Error('check failed: ' + what);
  log('ok:', what);
}

const profile = mkdtempSync(path.join(tmpdir(), 'gb-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1400, height: 1000 },
});
const page = context.pages()[0] || await context.newPage();
const problems = [];
page.on('pageerror', (e) => problems.push('page error: ' + e.message));
page.on('console', (m) => {
  // The sources route answers 404 on a server that does not have it, and the
  // dashboard hides the panel then; the browser logs the 404 all the same.
  if (m.type() === 'error' && !/sources\?tree=true|404 \(Not Found\)/.test(m.text() + (m.location().url || ''))) {
    problems.push('console error: ' + m.text());
  }
});
await page.addInitScript(() => {
  window.__csp = [];
  document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
});

let failed = false;
try {
  await (process.env.E2E_ASK === '1' ? runAsk() : process.env.E2E_PLAN === '1' ? runPlan() : run());
} catch (e) {
  failed = true;
  console.error(e.stack || String(e));
  await page.screenshot({ path: path.join(shots, 'failure.png'), fullPage: true }).catch(() => {});
} finally {
  await context.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
  clearTimeout(deadline);
}
if (!failed && problems.length) {
  failed = true;
  console.error(problems.join('\n'));
}
log(failed ? 'FAILED' : 'passed', '· screenshots in', shots);
process.exit(failed ? 1 : 0);

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
  await page.fill('#api-key', key);
  await page.click('#sign-in button[type=submit]');
  await page.waitForSelector('#runs');
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
  for (;;) {
    tree = await page.$$eval('#tree-table tbody tr', (rows) => rows.map((r) => ({
      id: Number(r.dataset.runId), status: r.dataset.status, depth: Number(r.dataset.depth),
      name: r.querySelector('.run-link').textContent,
      cells: Array.from(r.cells).map((c) => c.textContent),
    })));
    seen.counts.add(tree.length);
    if (tree.some((r) => r.status !== 'succeeded' && r.status !== 'failed')) seen.unended = true;
    if (tree.length >= 4 && tree.some((r) => r.depth > 0 && r.status === 'working') && !shotWorking) {
      shotWorking = true;
      await page.screenshot({ path: path.join(shots, 'run-working.png'), fullPage: true });
    }
    if (tree.length >= 4 && tree.every((r) => r.status === 'succeeded')) break;
    if (tree.some((r) => r.status === 'failed')) throw new Error('a run failed: ' + JSON.stringify(tree));
    if (Date.now() - t0 > 60_000) throw new Error('the tree did not finish: ' + JSON.stringify(tree));
    await page.waitForTimeout(100);
  }
  check(seen.unended, 'the tree was seen working before it ended');
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
  const msgs = await page.$$eval('#messages-body li', (ls) => ls.length);
  check(msgs > 0, 'the messages between sub-agents are shown: ' + msgs);
  const sourcesShown = await page.isVisible('#sources');
  log(sourcesShown ? 'sources panel shown: ' + (await page.$$eval('#sources-body tbody tr', (r) => r.length)) + ' rows'
    : 'sources panel hidden (the route answered 404)');
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

  // The list of runs, newest first.
  await page.click('#nav a[href="#/"]');
  await page.waitForSelector(`#runs-body tr[data-run-id="${rootID}"]`);
  const ids = await page.$$eval('#runs-body tr', (rows) => rows.map((r) => Number(r.dataset.runId)));
  check(ids.length >= 4 && ids.every((id, i) => i === 0 || id < ids[i - 1]), 'runs are listed newest first: ' + ids.join(','));
  check(await page.getAttribute(`#runs-body tr[data-run-id="${rootID}"]`, 'data-status') === 'succeeded', 'the list shows the research succeeded');

  await checkMarkdown();
  if (xssRun) await checkMarkupIsText(Number(xssRun));
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
  await page.screenshot({ path: path.join(shots, 'ask.png'), fullPage: true });
  await page.fill('#answer', answer);
  await page.click('#ask-form button[type=submit]');
  await page.waitForSelector('#ask.hidden', { state: 'attached' });
  await page.waitForSelector('#live.ended');
  await page.waitForFunction((a) => document.querySelector('#report-body')?.textContent.includes(a), answer);
  check((await page.textContent('#report-body h1')) === 'Answered', 'the report written after the answer is shown');
  const answered = await page.$$eval('#events-body tr[data-kind="answered"] td.detail', (tds) => tds.map((td) => td.textContent));
  check(answered.length === 1 && answered[0] === 'by its owner: ' + answer, 'the timeline shows the answer once: ' + JSON.stringify(answered));
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
  await page.click('#nav a[href="#/"]');
  await page.waitForSelector(`#runs-body tr[data-run-id="${id}"]`);
  const listed = await cells(`#runs-body tr[data-run-id="${id}"]`);
  check(/567 reasoning$/.test(listed[6]) && listed[7] === '1,234', 'the list shows the run\'s reasoning and cached tokens: ' + JSON.stringify(listed));
}

// checkMarkdown renders Markdown cases with the dashboard's own renderer,
// in the page, and compares the DOM it built (serialized) with what is
// expected.
async function checkMarkdown() {
  const cases = [
    ['## Title *here*', '<h2>Title <em>here</em></h2>'],
    ['**bold**, _em_ and snake_case_name', '<p><strong>bold</strong>, <em>em</em> and snake_case_name</p>'],
    ['[x](javascript:alert(1)) [d](data:text/html,hi) [ok](https://go.dev/doc)',
      '<p><span class="unsafe-link">x</span> <span class="unsafe-link">d</span> ' +
      '<a href="https://go.dev/doc" target="_blank" rel="noopener noreferrer nofollow">ok</a></p>'],
    ['(see https://pkg.go.dev/sync).', '<p>(see <a href="https://pkg.go.dev/sync" target="_blank" rel="noopener noreferrer nofollow">https://pkg.go.dev/sync</a>).</p>'],
    ['- a\n  - b\n- c', '<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>'],
    ['1. one\n2. two `<b>`', '<ol><li>one</li><li>two <code>&lt;b&gt;</code></li></ol>'],
    ['```\n<script>x()</script>\n```', '<pre><code>&lt;script&gt;x()&lt;/script&gt;</code></pre>'],
    ['> quoted <i>\n\n---', '<blockquote><p>quoted &lt;i&gt;</p></blockquote><hr>'],
    ['[1] a — https://a.example/x\n[2] b', '<p>[1] a — <a href="https://a.example/x" target="_blank" rel="noopener noreferrer nofollow">https://a.example/x</a><br>[2] b</p>'],
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
