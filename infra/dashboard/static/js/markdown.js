// A small Markdown renderer that builds DOM nodes itself, for reports
// written by models from untrusted pages: raw HTML in the source is shown
// as text, links are kept only for http(s) URLs, and nothing is ever parsed
// as HTML. It knows headings, paragraphs, lists (nested by indentation),
// block quotes, fenced and indented code, rules, and inline code, bold,
// italic, links and bare URLs. Unlike CommonMark, a line break inside a
// paragraph is kept.
import { h, safeURL } from './dom.js';

const heading = /^(#{1,6})[ \t]+(.*?)[ \t#]*$/;
const rule = /^ {0,3}([-*_])([ \t]*\1){2,}[ \t]*$/;
const fence = /^ {0,3}(```|~~~)(.*)$/;
const item = /^([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;
const quote = /^ {0,3}>[ \t]?(.*)$/;

// renderMarkdown returns a DocumentFragment of md.
export function renderMarkdown(md) {
  const frag = document.createDocumentFragment();
  blocks(String(md ?? '').replace(/\r\n?/g, '\n').split('\n'), frag);
  return frag;
}

function blocks(lines, parent) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (line.trim() === '') { i++; continue; }
    if ((m = fence.exec(line))) {
      const close = m[1];
      const code = [];
      for (i++; i < lines.length && !lines[i].trimStart().startsWith(close); i++) code.push(lines[i]);
      i++;
      parent.append(h('pre', {}, h('code', {}, code.join('\n'))));
      continue;
    }
    if ((m = heading.exec(line))) {
      parent.append(inline(m[2], h('h' + m[1].length)));
      i++;
      continue;
    }
    if (rule.test(line)) { parent.append(h('hr')); i++; continue; }
    if (quote.test(line)) {
      const inner = [];
      for (; i < lines.length && (m = quote.exec(lines[i])); i++) inner.push(m[1]);
      const bq = h('blockquote');
      blocks(inner, bq);
      parent.append(bq);
      continue;
    }
    if (item.test(line)) { i = list(lines, i, parent); continue; }
    if (/^( {4}|\t)/.test(line)) {
      const code = [];
      for (; i < lines.length && (/^( {4}|\t)/.test(lines[i]) || lines[i].trim() === ''); i++) code.push(lines[i].replace(/^( {4}|\t)/, ''));
      while (code.length && code[code.length - 1].trim() === '') code.pop();
      parent.append(h('pre', {}, h('code', {}, code.join('\n'))));
      continue;
    }
    const para = [];
    for (; i < lines.length && lines[i].trim() !== '' && !startsBlock(lines[i]); i++) para.push(lines[i]);
    const p = h('p');
    // A line break inside a paragraph is kept, as reports list their
    // sources one a line.
    para.forEach((l, k) => {
      if (k > 0) p.append(h('br'));
      inline(l.trim(), p);
    });
    parent.append(p);
  }
}

function startsBlock(line) {
  return heading.test(line) || rule.test(line) || fence.test(line) || quote.test(line) || item.test(line);
}

// list renders the list that starts at lines[i] and returns the index of
// the first line after it. Items indented deeper than the list's first
// item belong to the item above them, as do their continuation lines.
function list(lines, i, parent) {
  const first = item.exec(lines[i]);
  const indent = width(first[1]);
  const ordered = /\d/.test(first[2]);
  const el = h(ordered ? 'ol' : 'ul');
  if (ordered && parseInt(first[2], 10) !== 1) el.setAttribute('start', String(parseInt(first[2], 10)));
  while (i < lines.length) {
    const m = item.exec(lines[i]);
    if (!m || width(m[1]) !== indent || /\d/.test(m[2]) !== ordered) break;
    const li = inline(m[3], h('li'));
    i++;
    const sub = [];
    for (; i < lines.length && lines[i].trim() !== ''; i++) {
      const n = item.exec(lines[i]);
      if (n && width(n[1]) <= indent) break;
      if (!n && startsBlock(lines[i])) break;
      sub.push(lines[i]);
    }
    if (sub.length) {
      const nested = sub.filter((l) => item.test(l));
      if (nested.length) {
        let j = 0;
        while (j < sub.length && !item.test(sub[j])) { li.append(' '); inline(sub[j].trim(), li); j++; }
        if (j < sub.length) blocks(sub.slice(j).map((l) => l.slice(Math.min(indent + 2, leading(l)))), li);
      } else {
        for (const l of sub) { li.append(' '); inline(l.trim(), li); }
      }
    }
    el.append(li);
    if (i < lines.length && lines[i].trim() === '' && i + 1 < lines.length) {
      const n = item.exec(lines[i + 1]);
      if (n && width(n[1]) === indent && /\d/.test(n[2]) === ordered) i++;
    }
  }
  parent.append(el);
  return i;
}

function width(ws) { return ws.replace(/\t/g, '    ').length; }
function leading(l) { return l.length - l.trimStart().length; }

const linkRE = /\[((?:[^\[\]\\]|\\.)*)\]\(\s*<?([^\s<>()]*(?:\([^\s<>()]*\)[^\s<>()]*)*)>?(?:\s+"[^"]*")?\s*\)/y;
const urlRE = /https?:\/\/[^\s<>"'`]+/y;
const autoRE = /<(https?:\/\/[^\s<>]+)>/y;

// inline renders text's inline Markdown into parent and returns parent.
export function inline(text, parent) {
  let buf = '';
  const flush = () => { if (buf) { parent.append(document.createTextNode(buf)); buf = ''; } };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    let m;
    if (c === '\\' && i + 1 < text.length && /[!-\/:-@\[-`{-~]/.test(text[i + 1])) { buf += text[i + 1]; i += 2; continue; }
    if (c === '`') {
      const ticks = /^`+/.exec(text.slice(i))[0];
      const j = text.indexOf(ticks, i + ticks.length);
      if (j > 0) {
        flush();
        parent.append(h('code', {}, text.slice(i + ticks.length, j).replace(/^ (.*) $/, '$1')));
        i = j + ticks.length;
        continue;
      }
      buf += ticks; i += ticks.length; continue;
    }
    if (c === '[' && (m = at(linkRE, text, i))) {
      flush();
      const url = safeURL(m[2]);
      const el = url ? h('a', { href: url, target: '_blank', rel: 'noopener noreferrer nofollow' }) : h('span', { class: 'unsafe-link' });
      parent.append(inline(m[1], el));
      i += m[0].length;
      continue;
    }
    if (c === '<' && (m = at(autoRE, text, i))) {
      flush();
      parent.append(urlLink(m[1]));
      i += m[0].length;
      continue;
    }
    if (c === 'h' && !/\w/.test(text[i - 1] || '') && (m = at(urlRE, text, i))) {
      const u = trimURL(m[0]);
      flush();
      parent.append(urlLink(u));
      i += u.length;
      continue;
    }
    if ((c === '*' || c === '_') && text[i + 1] === c && !(c === '_' && /\w/.test(text[i - 1] || ''))) {
      const d = c + c;
      let j = text.indexOf(d, i + 2);
      while (j > 0 && c === '_' && /\w/.test(text[j + 2] || '')) j = text.indexOf(d, j + 1);
      if (j > i + 2 && text[i + 2] !== ' ' && text[j - 1] !== ' ') {
        flush();
        parent.append(inline(text.slice(i + 2, j), h('strong')));
        i = j + 2;
        continue;
      }
    }
    if ((c === '*' || c === '_') && text[i + 1] && text[i + 1] !== ' ' && text[i + 1] !== c && !(c === '_' && /\w/.test(text[i - 1] || ''))) {
      let j = text.indexOf(c, i + 1);
      while (j > 0 && c === '_' && /\w/.test(text[j + 1] || '')) j = text.indexOf(c, j + 1);
      if (j > i + 1 && text[j - 1] !== ' ') {
        flush();
        parent.append(inline(text.slice(i + 1, j), h('em')));
        i = j + 1;
        continue;
      }
    }
    buf += c;
    i++;
  }
  flush();
  return parent;
}

function at(re, text, i) {
  re.lastIndex = i;
  return re.exec(text);
}

// trimURL drops the punctuation that ends a sentence, and a closing
// parenthesis the URL did not open.
function trimURL(u) {
  for (;;) {
    const t = u.replace(/[.,;:!?*_]+$/, '');
    const closes = (t.match(/\)/g) || []).length > (t.match(/\(/g) || []).length;
    const v = closes && t.endsWith(')') ? t.slice(0, -1) : t;
    if (v === u) return u;
    u = v;
  }
}

function urlLink(u) {
  const url = safeURL(u);
  return url ? h('a', { href: url, target: '_blank', rel: 'noopener noreferrer nofollow' }, u) : document.createTextNode(u);
}

