// The browser test of the comparison of two researches: drives Debian's
// chromium through playwright-core against a running stack.
//
//   node e2e/compare.mjs BASE_URL API_KEY RUN_A RUN_B
//
// RUN_A and RUN_B are finished researches on different topics
// (compare_e2e_test.go). The test signs in, picks the two in the runs list
// with their boxes (a third pick lets the first go), opens the comparison
// with its Compare button, and checks that each column is its run, that
// the totals are the API's with B's difference from A (cost included) and
// the rows that differ marked, that the tools and the sources each read
// are the API's with those only one read marked, that the step where the
// root agents diverge is named and marked, that both reports show, and
// that at 400 px the columns stack.
// The screenshot compare.png goes to $SCREENSHOT_DIR. It prints "ok: ..."
// per check and exits 0 when all pass.
import path from 'node:path';
import { open, usage } from './lib.mjs';

const [base, key, a, b] = process.argv.slice(2);
if (!base || !key || !Number(a) || !Number(b)) usage('node e2e/compare.mjs BASE_URL API_KEY RUN_A RUN_B');
const [A, B] = [Number(a), Number(b)];
const { page, shots, check, api, signIn, finish } = await open({ name: 'the compare browser test', base, key, seconds: 90 });
await finish(run, 'compare-failure.png');

// read is what the API says of run id that the comparison shows.
async function read(id) {
  const run = await api('/v1/gb/research/' + id);
  const steps = (await api('/v1/gb/research/' + id + '/steps?order=asc&limit=100')).steps;
  const sources = (await api('/v1/gb/research/' + id + '/sources?tree=true')).sources;
  const used = new Map();
  for (const s of steps) for (const m of s.messages) for (const c of m.tool_calls || []) used.set(c.name, (used.get(c.name) || 0) + 1);
  return { run, own: steps.filter((s) => s.run_id === id), used,
    read: new Set(sources.filter((s) => s.kind !== 'result').map((s) => s.url || s.title)) };
}

async function run() {
  const [x, y] = [await read(A), await read(B)];
  check(x.run.status === 'succeeded' && y.run.status === 'succeeded', 'both researches succeeded');

  // Pick them in the list; a third pick lets the first go.
  await signIn();
  const box = (id) => `#runs-body tr[data-run-id="${id}"] input.pick`;
  await page.waitForSelector(box(A));
  await page.waitForSelector(box(B));
  check(await page.isDisabled('#compare-runs'), 'Compare waits for two runs to be picked');
  const other = await page.$$eval('#runs-body tr', (rs) => rs.map((r) => Number(r.dataset.runId)));
  const third = other.find((id) => id !== A && id !== B);
  await page.check(box(third));
  await page.check(box(A));
  await page.check(box(B));
  check(!(await page.isChecked(box(third))) && await page.isEnabled('#compare-runs') &&
    await page.textContent('#compare-runs') === `Compare #${A} and #${B}`, 'a third pick lets the first go: ' + await page.textContent('#compare-runs'));
  await page.screenshot({ path: path.join(shots, 'compare-pick.png') });
  await page.click('#compare-runs');
  await page.waitForURL(new RegExp(`#/compare/${A}/${B}$`));
  await page.waitForSelector('#compare-totals');

  // The columns are the two runs.
  const heads = await page.$$eval('.compare-head', (hs) => hs.map((h) => ({ id: Number(h.dataset.runId), side: h.id,
    topic: h.querySelector('.topic-full').textContent, link: h.querySelector('a.run-link').getAttribute('href') })));
  check(heads.length === 2 && heads[0].side === 'compare-a' && heads[0].id === A && heads[1].id === B &&
    heads[0].topic === x.run.topic && heads[1].topic === y.run.topic && heads[1].link === '#/runs/' + B,
    'column A is #' + A + ' and column B is #' + B + ', with their topics and links');

  // Totals, and B's difference from A.
  const totals = Object.fromEntries(await page.$$eval('#compare-totals tbody tr', (rs) => rs.map((r) => [r.dataset.metric,
    { a: r.querySelector('.a').textContent, b: r.querySelector('.b').textContent, delta: r.querySelector('.delta').textContent,
      differs: r.classList.contains('differs') }])));
  const int = (n) => n.toLocaleString('en-US');
  check(totals.steps.a === int(x.run.tree.steps) && totals.steps.b === int(y.run.tree.steps) &&
    totals.tokens.a === int(x.run.tree.tokens) && totals.agents.b === int(y.run.tree.runs), 'the totals are the API\'s: ' + JSON.stringify(totals.steps));
  const dc = y.run.tree.cost_usd - x.run.tree.cost_usd;
  check(Math.abs(dc) > 1e-9 && totals.cost.differs && totals.cost.delta === (dc > 0 ? '+' : '−') + '$' + Math.abs(dc).toFixed(4),
    'the cost delta is B\'s cost less A\'s: ' + JSON.stringify(totals.cost));
  const dt = y.run.tree.tokens - x.run.tree.tokens;
  check(dt !== 0 && totals.tokens.differs && totals.tokens.delta === (dt > 0 ? '+' : '−') + int(Math.abs(dt)),
    'tokens differ, marked, by ' + totals.tokens.delta);
  check(totals.supported.a === int(x.run.citations.supported) && totals.unsupported.b === int(y.run.citations.unsupported),
    'the citation counts are the API\'s: supported ' + totals.supported.a + ' and ' + totals.supported.b);

  // Tools, each as often as the API's steps called it.
  const tools = await page.$$eval('#compare-tools tbody tr', (rs) => rs.map((r) => ({ tool: r.dataset.tool,
    a: r.querySelector('.a').textContent, b: r.querySelector('.b').textContent, differs: r.classList.contains('differs') })));
  check(tools.length > 0 && tools.every((t) => t.a === int(x.used.get(t.tool) || 0) && t.b === int(y.used.get(t.tool) || 0) &&
    t.differs === (t.a !== t.b)), 'the tools used are the API\'s: ' + tools.map((t) => t.tool + ' ' + t.a + '/' + t.b).join(', '));

  // Sources: what only one read is marked as such.
  const listed = async (side) => page.$$eval(`#compare-sources-${side} li`, (ls) => ls.map((l) => ({ url: l.dataset.url, only: l.classList.contains('only'),
    tag: l.querySelector('.only-tag')?.textContent || '' })));
  const [la, lb] = [await listed('a'), await listed('b')];
  check(la.length === x.read.size && lb.length === y.read.size && la.every((s) => x.read.has(s.url)),
    'each column lists the sources its tree read: ' + la.length + ' and ' + lb.length);
  check(la.every((s) => s.only === !y.read.has(s.url) && (!s.only || s.tag === 'only in A')) &&
    lb.every((s) => s.only === !x.read.has(s.url) && (!s.only || s.tag === 'only in B')), 'a source only one of them read is marked "only in A" or "only in B"');
  check(la.some((s) => s.only) || lb.some((s) => s.only), 'the two read different sources: ' +
    await page.textContent('#compare-sources-sum'));

  // The step where the root agents diverge.
  const doing = (s) => s ? (s.messages.flatMap((m) => m.tool_calls || []).map((c) => c.name + ' ' + c.arguments).join('\n') || 'answer') : null;
  let at = 0;
  for (let i = 0; i < Math.max(x.own.length, y.own.length); i++) if (doing(x.own[i]) !== doing(y.own[i])) { at = i + 1; break; }
  const diverge = await page.$eval('#compare-diverge', (p) => ({ step: Number(p.dataset.step), text: p.textContent }));
  check(at > 0 && diverge.step === at && diverge.text.startsWith('Their root agents diverge at step ' + at + ': A → '),
    'the step where they diverge is named: ' + diverge.text);
  check(await page.$$eval('#compare-steps li.diverge', (ls) => ls.map((l) => l.closest('ol').id + ' ' + l.dataset.step).join()) ===
    `compare-steps-a ${at},compare-steps-b ${at}`, 'and marked in both columns of steps');

  // The reports, rendered.
  const reports = await page.$$eval('#compare-reports .report', (rs) => rs.map((r) => ({ id: r.id, h1: r.querySelector('h1')?.textContent, len: r.textContent.length })));
  check(reports.length === 2 && reports.every((r) => r.h1 && r.len > 100), 'both reports show: ' + reports.map((r) => r.h1).join(' | '));
  await page.screenshot({ path: path.join(shots, 'compare.png'), fullPage: true });

  // On a narrow screen the columns stack and the page is no wider than it.
  await page.setViewportSize({ width: 400, height: 900 });
  const narrow = await page.evaluate(() => {
    const [a, b] = ['#compare-a', '#compare-b'].map((s) => document.querySelector(s).getBoundingClientRect());
    return { stacked: b.top >= a.bottom - 1 && Math.abs(a.left - b.left) < 2, page: document.documentElement.scrollWidth <= window.innerWidth };
  });
  check(narrow.stacked && narrow.page, 'at 400 px the columns stack and the page is no wider than the screen: ' + JSON.stringify(narrow));
}
