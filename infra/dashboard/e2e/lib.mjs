// What the dashboard's browser tests (run.mjs, steps.mjs, citations.mjs)
// share: Debian's chromium launched through playwright-core in a fresh
// profile, a page whose errors are recorded, a clock and a bound on the
// whole test, checks that log what passed, the API read as the test's own
// client, signing in, and the end that reports and exits.
import { chromium } from 'playwright-core';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

// usage prints how the script is called and exits 2.
export function usage(line) {
  console.error('usage: ' + line);
  process.exit(2);
}

// runArgs reads BASE_URL API_KEY RUN_ID from the command line; without
// them, or with a RUN_ID that is no number, it prints usage and exits 2.
export function runArgs(line) {
  const [base, key, id] = process.argv.slice(2);
  if (!base || !key || !Number(id)) usage(line);
  return { base, key, id: Number(id) };
}

// notFound passes the console errors of 404 answers, which a browser logs
// for a route the page knows may be missing, and of 501 answers, which a
// deployment that cannot stream gives the event stream.
const notFound = (m) => /404 \(Not Found\)|501 \(Not Implemented\)/.test(m.text());

// open starts a browser test named name against the API at base with key:
// the screenshots folder shots, made (by default $SCREENSHOT_DIR, else
// gb-screenshots in the temporary folder); a bound that exits 1 after
// seconds; and Chromium with options added to its launch's. Page errors,
// and console errors that ignore does not pass, are the test's problems.
// It returns the page and what the test uses with it; finish ends the test.
export async function open({ name, base, key, seconds, shots, options = {}, ignore = notFound }) {
  shots = shots || process.env.SCREENSHOT_DIR || path.join(tmpdir(), 'gb-screenshots');
  mkdirSync(shots, { recursive: true });
  const t0 = Date.now();
  const log = (...a) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);
  const deadline = setTimeout(() => { console.error(`${name} took over ${seconds} s`); process.exit(1); }, seconds * 1000);

  const profile = mkdtempSync(path.join(tmpdir(), 'gb-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1400, height: 1000 },
    ...options,
  });
  const page = context.pages()[0] || await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !ignore(m)) problems.push('console error: ' + m.text());
  });

  // check fails the test unless ok, and logs what passed.
  const check = (ok, what) => {
    if (!ok) throw new Error('check failed: ' + what);
    log('ok:', what);
  };
  // api reads path p from the API as the test's own client, outside the page.
  const api = async (p) => {
    const res = await fetch(base + p, { headers: { Authorization: 'Bearer ' + key } });
    if (!res.ok) throw new Error('GET ' + p + ': ' + res.status);
    return res.json();
  };
  // enterKey signs in with the key on the sign-in form shown.
  const enterKey = async () => {
    await page.fill('#api-key', key);
    await page.click('#sign-in button[type=submit]');
    await page.waitForSelector('#runs');
  };
  // signIn opens the dashboard and signs in.
  const signIn = async () => {
    await page.goto(base + '/ui');
    await enterKey();
  };
  // finish runs body; on a failure it takes the screenshot failureShot. It
  // closes the browser, fails on problems too, and exits 0 when all passed.
  const finish = async (body, failureShot) => {
    let failed = false;
    try {
      await body();
    } catch (e) {
      failed = true;
      console.error(e.stack || String(e));
      await page.screenshot({ path: path.join(shots, failureShot), fullPage: true }).catch(() => {});
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
  };
  return { page, shots, t0, log, problems, check, api, enterKey, signIn, finish };
}
