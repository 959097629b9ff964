// The browser test of the citation check on a report: drives Debian's
// chromium through playwright-core against a running stack.
//
//   node e2e/citations.mjs BASE_URL API_KEY RUN_ID
//
// RUN_ID is a finished research whose report was checked; the Go test
// (citations_e2e_test.go) made the verdict of its first claim unsupported,
// with a passage that holds markup. The test signs in, opens the run's page,
// waits for the report's markers to be decorated, checks that each claim
// and source the API lists has its mark with its verdict's class and the
// passage as its tooltip, opens the first mark's note with a click and
// finds the passage in it as text (the markup made no element, ran
// nothing), closes it with Enter, and leaves the Sources list plain.
// The screenshot citations.png goes to $SCREENSHOT_DIR. It prints
// "ok: ..." per check and exits 0 when all pass.
import path from 'node:path';
import { open, runArgs } from './lib.mjs';

const { base, key, id: runID } = runArgs('node e2e/citations.mjs BASE_URL API_KEY RUN_ID');
const { page, shots, check, api, signIn, finish } = await open({ name: 'the citations browser test', base, key, seconds: 90 });
await finish(run, 'citations-failure.png');

async function run() {
  const checked = await api('/v1/gb/research/' + runID + '/citations');
  const pairs = checked.citations.filter((c) => c.marker > 0);
  check(pairs.length >= 2 && pairs[0].verdict === 'unsupported' && /<img/.test(pairs[0].passage),
    'the API lists the check: ' + pairs.length + ' claim–source pairs, the first unsupported with markup in its passage');

  await signIn();
  await page.goto(base + '/ui/#/runs/' + runID);
  await page.waitForSelector('#report-body[data-citations="decorated"] .cite');

  const marks = await page.$$eval('#report-body .cite', (ms) => ms.map((m) => ({
    claim: Number(m.dataset.claim), marker: Number(m.dataset.marker), verdict: m.dataset.verdict,
    cls: m.className, title: m.title, text: m.textContent })));
  check(pairs.every((p) => marks.some((m) => m.claim === p.claim && m.marker === p.marker)),
    'every claim and source the API lists has its mark in the report: ' + marks.length + ' marks');
  check(marks.every((m) => m.cls === 'cite cite-' + m.verdict && pairs.some((p) => p.claim === m.claim &&
    p.marker === m.marker && p.verdict === m.verdict && m.title.includes(p.passage))),
    'each mark has its verdict\'s class and the passage in its tooltip: ' + [...new Set(marks.map((m) => m.verdict))].join(', '));
  check(await page.$$eval('#report-body h2', (hs) => {
    const h = hs.find((x) => /sources/i.test(x.textContent));
    if (!h) return true;
    for (let n = h.nextElementSibling; n && !/^H[1-6]$/.test(n.tagName); n = n.nextElementSibling) {
      if (n.querySelector('.cite')) return false;
    }
    return true;
  }), 'the Sources list keeps its numbers plain');

  const first = '#report-body .cite[data-claim="' + pairs[0].claim + '"][data-marker="' + pairs[0].marker + '"]';
  await page.click(first);
  const shown = await page.$eval(first, (m) => {
    const n = m.nextElementSibling;
    return n && n.classList.contains('cite-note') ? {
      passage: n.querySelector('.cite-passage').textContent, verdict: n.querySelector('strong').textContent,
      expanded: m.getAttribute('aria-expanded'), elements: n.querySelectorAll('img, script, b').length } : null;
  });
  check(shown && shown.passage === pairs[0].passage && shown.verdict.startsWith('unsupported') && shown.expanded === 'true',
    'a click shows the verdict and the passage under the marker: ' + (shown && shown.verdict));
  check(shown.elements === 0 && await page.evaluate(() => window.__xss === undefined),
    'the passage\'s markup shows as text and runs nothing');
  await page.locator('#report').screenshot({ path: path.join(shots, 'citations.png') });
  await page.focus(first);
  await page.keyboard.press('Enter');
  check(await page.$eval(first, (m) => !(m.nextElementSibling && m.nextElementSibling.classList.contains('cite-note')) &&
    m.getAttribute('aria-expanded') === 'false'), 'Enter on the marker hides the note again');
}
