// The browser test of a run's steps and timeline: drives Debian's chromium
// through playwright-core against a running stack.
//
//   node e2e/steps.mjs BASE_URL API_KEY ROOT_RUN_ID
//
// ROOT_RUN_ID is the root of a finished tree (the demo's: a root and its
// sub-agents) whose first tool result of the root's first step was made to
// hold markup and to be longer than the API's cut (steps_e2e_test.go). The
// test signs in, opens the root's page, checks that its steps are listed
// as the API lists them, expands the first step and finds each tool call's
// arguments and each result as text (the markup as text, nothing run), reads
// the cut result whole with its button, and checks that the timeline has a
// lane per agent, a bar per step with model time drawn, the root's wait
// for its sub-agents as a park, and spawns, reports and messages as arrows.
// Screenshots steps.png and timeline.png go to $SCREENSHOT_DIR. It prints
// "ok: ..." per check and exits 0 when all pass.
import path from 'node:path';
import { open, runArgs } from './lib.mjs';

const { base, key, id: rootID } = runArgs('node e2e/steps.mjs BASE_URL API_KEY ROOT_RUN_ID');
const { page, shots, check, api, signIn, finish } = await open({ name: 'the steps browser test', base, key, seconds: 90 });
await finish(run, 'steps-failure.png');

async function run() {
  const tree = await api('/v1/gb/research/' + rootID + '/tree');
  const own = await api('/v1/gb/research/' + rootID + '/steps?run=' + rootID + '&order=asc&limit=100');
  check(tree.runs.length >= 2 && own.steps.length >= 2, 'the tree has sub-agents and its root has steps: ' + tree.runs.length + ' agents');

  await signIn();
  await page.goto(base + '/ui/#/runs/' + rootID);
  await page.waitForSelector('#live.ended');
  await page.waitForFunction((n) => document.querySelectorAll('#steps-body details.step').length === n, own.steps.length);

  // The list: a step per committed step of the root, in order, closed.
  const listed = await page.$$eval('#steps-body details.step', (ds) => ds.map((d) => ({
    step: Number(d.dataset.step), open: d.open, summary: d.querySelector('summary').textContent })));
  check(listed.map((s) => s.step).join() === own.steps.map((s) => s.step).join(), 'the page lists the root\'s steps in order: ' + listed.length);
  check(listed.every((s) => !s.open) && /tokens · \$\d\.\d{4} · model \d+\.\d s · tools \d+\.\d s/.test(listed[0].summary),
    'each step is closed and its summary tells tokens, cost, model and tool time: ' + listed[0].summary);
  check(listed.every((s) => / · gb .+ @ [0-9a-f]{12}/.test(s.summary)),
    'each step says the gb version that made it and the bundle it was made with: ' + listed[0].summary);

  // Expand the first step: its tool calls' arguments and its results, as text.
  const first = own.steps[0];
  const calls = first.messages.flatMap((m) => m.tool_calls || []);
  const results = first.messages.filter((m) => m.role === 'tool');
  check(calls.length > 0 && results.length > 0, 'the first step called tools: ' + calls.map((c) => c.name).join(', '));
  const sel = '#steps-body details.step[data-step="' + first.step + '"]';
  await page.click(sel + ' > summary');
  check(await page.$eval(sel, (d) => d.open), 'a click on its summary opens the step');
  const shown = await page.$eval(sel, (d) => ({
    calls: Array.from(d.querySelectorAll('.tool-call')).map((c) => ({ name: c.dataset.tool, args: c.querySelector('.tool-args').textContent })),
    results: Array.from(d.querySelectorAll('.step-msg[data-role="tool"] .step-text')).map((p) => p.textContent),
    elements: d.querySelectorAll('.step-body img, .step-body script, .step-body b').length,
  }));
  check(calls.every((c, i) => shown.calls[i] && shown.calls[i].name === c.name && shown.calls[i].args === c.arguments),
    'each tool call shows its name and its arguments as the API has them: ' + shown.calls.map((c) => c.name + ' ' + c.args).join('; '));
  check(results.every((r, i) => shown.results[i] === r.content), 'each tool result shows as the API has it (cut)');
  check(shown.results[0].startsWith('<img src=x onerror=') && shown.elements === 0,
    'markup in a tool result shows as text and makes no element');
  check(results[0].truncated === true && results[0].content_chars > Array.from(results[0].content).length,
    'the API cut the long result: ' + Array.from(results[0].content).length + ' of ' + results[0].content_chars);
  await page.locator('#steps').screenshot({ path: path.join(shots, 'steps.png') });

  // Read the cut result whole.
  await page.click(sel + ' button.step-full');
  await page.waitForFunction(([s, n]) => {
    const p = document.querySelector(s + ' .step-msg[data-role="tool"] .step-text');
    return p && Array.from(p.textContent).length === n;
  }, [sel, results[0].content_chars]);
  check(true, 'the "Show all" button reads the result whole: ' + results[0].content_chars + ' characters');
  check(await page.evaluate(() => window.__xss === undefined), 'nothing in a step ran');

  // The timeline: a lane per agent, a bar per step, model and tool time, arrows.
  await page.waitForSelector('#timeline svg.timeline');
  const tl = await page.$eval('#timeline svg.timeline', (svg, root) => ({
    lanes: Array.from(svg.querySelectorAll('g.tl-lane')).map((g) => ({ id: Number(g.dataset.runId), name: g.querySelector('.tl-name').textContent,
      bars: g.querySelectorAll('g.tl-step').length, model: g.querySelectorAll('rect.tl-model').length })),
    spawns: svg.querySelectorAll('line.tl-arrow[data-kind="spawn"]').length,
    reports: svg.querySelectorAll('line.tl-arrow[data-kind="report"]').length,
    messages: svg.querySelectorAll('line.tl-arrow[data-kind="message"]').length,
    rootParks: svg.querySelectorAll('g.tl-lane[data-run-id="' + root + '"] line.tl-park').length,
    titles: Array.from(svg.querySelectorAll('g.tl-step > title')).map((t) => t.textContent),
  }), String(rootID));
  check(tl.lanes.length === tree.runs.length && tree.runs.every((r) => tl.lanes.some((l) => l.id === r.id && l.name === (r.name || 'research'))),
    'the timeline has a lane per agent: ' + tl.lanes.map((l) => l.name).join(', '));
  check(tree.runs.every((r) => { const l = tl.lanes.find((x) => x.id === r.id); return l.bars === r.steps && l.model === r.steps; }),
    'each lane has a bar per step, each with its model time: ' + tl.lanes.map((l) => l.name + ' ' + l.bars).join(', '));
  const kids = tree.runs.filter((r) => r.parent_id != null).length;
  check(tl.spawns === kids && tl.reports === kids, 'spawns and reports are arrows between lanes: ' + tl.spawns + ' and ' + tl.reports);
  const sent = (await api('/v1/gb/research/' + rootID + '/messages')).messages.filter((m) => m.from !== 'user').length;
  check(tl.messages === sent && sent > 0, 'messages between agents are arrows between lanes: ' + tl.messages);
  check(tl.rootParks === 1, 'the root\'s wait for its sub-agents is a park in its lane');
  check(tl.titles.every((t) => /step \d+ · .*\nmodel \d+\.\d\d s, tools \d+\.\d\d s/.test(t)), 'each bar tells its step, model and tool time');
  await page.locator('#timeline').screenshot({ path: path.join(shots, 'timeline.png') });
}
