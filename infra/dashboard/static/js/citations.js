// The citation check on a run's report: each [n] marker of the rendered
// report gets the verdict of its claim and source (a class: cite-supported,
// cite-weak, cite-unsupported, cite-unread), the passage of the source that
// best supports the claim as its tooltip, and, on click (or Enter), a note
// below it with the verdict, the reason and the passage. Everything shown
// is text: the passage is page text and is never parsed as markup.
import { api } from './api.js';
import { h } from './dom.js';

// A marker may name a page of its source: [3, p. 7], [2, slide 4].
const markerRE = /\[(\d{1,4}(?:\s*,\s*\d{1,4})*)((?:,?\s*(?:pp?\.|pages?|slides?|sheets?)\s*\d{1,5}(?:\s*[–-]\s*\d{1,5})?)?)\]/g;
const sourcesRE = /^\W*(sources|references)\W*$/i;
const decorated = new WeakMap(); // report element -> the key it was decorated for

// decorateCitations marks the markers of the report rendered in el with the
// verdicts of run's citation check; it does nothing for a run not checked,
// and again nothing while the run, its report and its counts stay the same.
export async function decorateCitations(el, run, signal) {
  const key = run.id + '\n' + run.report + '\n' + JSON.stringify(run.citations);
  // The report may have been rendered again since (its status changed).
  if (decorated.get(el) === key && (el.dataset.citations !== 'decorated' || el.querySelector('.cite'))) return;
  decorated.set(el, key);
  if (!run.citations || !run.report) return;
  let checked;
  try {
    checked = await api('/v1/gb/research/' + run.id + '/citations', { signal });
  } catch {
    decorated.delete(el); // try again on the next refresh
    return;
  }
  if (signal && signal.aborted) return;
  undecorate(el);
  decorate(el, checked.citations || []);
  el.dataset.citations = 'decorated';
}

// normalize reduces a claim or a block of the rendered report to comparable
// text: no markers, flags, links' targets or emphasis, spaces collapsed.
function normalize(s) {
  return String(s)
    .replace(/\[([^\]]*)\]\([^)\s]*\)/g, '$1')
    .replace(markerRE, ' ')
    .replace(/⚠ (unsupported|unread)/g, ' ')
    .replace(/[*_`]/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();
}

// claimsOf groups the check's rows by claim: its normalized text and its
// verdict by marker.
function claimsOf(rows) {
  const byIndex = new Map();
  for (const r of rows) {
    if (!r.marker) continue;
    let c = byIndex.get(r.claim);
    if (!c) {
      c = { index: r.claim, text: normalize(r.text), byMarker: new Map() };
      byIndex.set(r.claim, c);
    }
    c.byMarker.set(r.marker, r);
  }
  return [...byIndex.values()].sort((a, b) => a.index - b.index);
}

// inSources reports whether node lies in the report's sources section: after
// a heading named Sources or References, before the next heading as high.
function inSources(el, node) {
  let top = node;
  while (top.parentNode && top.parentNode !== el) top = top.parentNode;
  for (let sib = top; sib; sib = sib.previousElementSibling) {
    const m = /^H([1-6])$/.exec(sib.tagName || '');
    if (!m) continue;
    if (sib === top) return false;
    if (sourcesRE.test(sib.textContent)) return true;
    // A heading that is not Sources ends the search.
    return false;
  }
  return false;
}

function decorate(el, rows) {
  const claims = claimsOf(rows);
  if (!claims.length) return;
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  const texts = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (markerRE.test(n.nodeValue)) texts.push(n);
    markerRE.lastIndex = 0;
  }
  const used = new WeakMap(); // block -> Set of "claim/marker" already placed in it
  for (const node of texts) {
    const parent = node.parentElement;
    if (!parent || parent.closest('pre, code, h1, h2, h3, h4, h5, h6, a') || inSources(el, node)) continue;
    const block = parent.closest('li, p, td, th, blockquote') || parent;
    const blockText = normalize(block.textContent);
    if (!used.has(block)) used.set(block, new Set());
    const seen = used.get(block);
    const find = (n) => {
      for (const c of claims) {
        const row = c.byMarker.get(n);
        if (row && !seen.has(c.index + '/' + n) && c.text && blockText.includes(c.text)) {
          seen.add(c.index + '/' + n);
          return row;
        }
      }
      return null;
    };
    replaceMarkers(node, find);
  }
}

// replaceMarkers replaces the markers of a text node by marks of their
// verdicts, leaving a marker whose claim is not found as it was.
function replaceMarkers(node, find) {
  const text = node.nodeValue;
  const out = [];
  let last = 0;
  for (const m of text.matchAll(markerRE)) {
    out.push(text.slice(last, m.index));
    const nums = m[1].split(',').map((s) => Number(s.trim()));
    const rows = nums.map(find);
    if (nums.length === 1) {
      out.push(rows[0] ? mark(m[0], rows[0]) : m[0]);
    } else {
      out.push('[');
      nums.forEach((n, i) => {
        if (i) out.push(', ');
        out.push(rows[i] ? mark(String(n), rows[i]) : String(n));
      });
      out.push((m[2] || '') + ']');
    }
    last = m.index + m[0].length;
  }
  out.push(text.slice(last));
  node.replaceWith(...out.map((p) => (typeof p === 'string' ? document.createTextNode(p) : p)));
}

// mark is the marker of one claim and source, with its verdict; a click or
// Enter shows or hides the note under it.
function mark(label, row) {
  const tip = row.verdict + (row.reason ? ' — ' + row.reason : '') + (row.passage ? '\n\n' + row.passage : '');
  const el = h('span', {
    class: 'cite cite-' + row.verdict, role: 'button', tabindex: '0', title: tip,
    'data-verdict': row.verdict, 'data-claim': row.claim, 'data-marker': row.marker,
    'aria-expanded': 'false',
  }, label);
  const toggle = () => {
    const open = el.nextSibling && el.nextSibling.classList && el.nextSibling.classList.contains('cite-note');
    if (open) {
      el.nextSibling.remove();
      el.setAttribute('aria-expanded', 'false');
      return;
    }
    el.after(note(row));
    el.setAttribute('aria-expanded', 'true');
  };
  el.addEventListener('click', toggle);
  el.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); toggle(); }
  });
  return el;
}

// note tells a pair's verdict, its reason and its passage, as text.
function note(row) {
  return h('span', { class: 'cite-note cite-' + row.verdict, 'data-claim': row.claim, 'data-marker': row.marker },
    h('strong', {}, row.verdict + (row.score ? ' (' + Math.round(row.score * 100) + '% of the claim\'s words)' : '')),
    row.ref ? h('span', { class: 'cite-ref' }, ' · [' + row.marker + '] ' + row.ref) : null,
    row.page ? h('span', { class: 'cite-page' }, ' · cites p. ' + row.page) : null,
    row.passage_page ? h('span', { class: 'cite-page' }, ' · passage on ' + row.passage_page) : null,
    row.reason ? h('span', { class: 'cite-reason' }, ' · ' + row.reason) : null,
    row.passage ? h('q', { class: 'cite-passage' }, row.passage) : null);
}

// undecorate puts back the plain markers of a report decorated before.
function undecorate(el) {
  for (const n of el.querySelectorAll('.cite-note')) n.remove();
  for (const m of el.querySelectorAll('.cite')) m.replaceWith(document.createTextNode(m.textContent));
  el.normalize();
}

// The marks' style sheet, linked once (the page allows no inline style).
if (!document.querySelector('link[data-citations]')) {
  document.head.append(h('link', { rel: 'stylesheet', href: 'citations.css', 'data-citations': '' }));
}
