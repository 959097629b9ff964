// Markdown of reports, which models write from untrusted pages. markdown-it
// (vendor/markdown-it.min.js, version 15.0.3: see vendor/VENDOR.md) parses
// it with raw HTML off; the page is built here from its tokens with
// createElement and text nodes, never from HTML, so whatever the source
// holds (tags, entities, scripts) ends up as text. Links are kept for
// http(s) and mailto URLs only; images become links to them. Tables,
// reference links, entities and nested emphasis are CommonMark's and GFM's.
// Unlike CommonMark, a line break inside a paragraph is kept, as reports
// list their sources one a line.
import markdownit from './vendor/markdown-it.min.js';
import { h } from './dom.js';

const md = markdownit('default', { html: false, linkify: true, breaks: true, typographer: false });
// Bare URLs become links only with their scheme (https://go.dev), not
// words that look like host names (go.dev) or addresses.
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false });
// A link to anything else (javascript:, data:, a relative path) is not
// parsed as a link: it stays the text it was written as.
md.validateLink = (url) => linkURL(url) !== null;

// tags are the elements tokens may open; any other tag becomes a span.
const tags = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'li', 'blockquote',
  'table', 'thead', 'tbody', 'tr', 'th', 'td', 'strong', 'em', 's']);
const linkAttrs = { target: '_blank', rel: 'noopener noreferrer nofollow' };

// renderMarkdown returns a DocumentFragment of src.
export function renderMarkdown(src) {
  const frag = document.createDocumentFragment();
  build(md.parse(String(src ?? ''), {}), frag);
  return frag;
}

// linkURL returns the normalized URL when it is absolute http, https or
// mailto, else null.
export function linkURL(s) {
  try {
    const u = new URL(String(s));
    return u.protocol === 'http:' || u.protocol === 'https:' || u.protocol === 'mailto:' ? u.href : null;
  } catch {
    return null;
  }
}

// build appends what tokens describe to root: an opening token starts an
// element the tokens up to its closing one go into; a hidden one (the
// paragraph of a tight list item) leaves its content in its parent.
function build(tokens, root) {
  const stack = [root];
  for (const t of tokens) {
    const top = stack[stack.length - 1];
    if (t.nesting === 1) {
      const el = t.hidden ? top : open(t);
      if (el !== top) top.append(el);
      stack.push(el);
    } else if (t.nesting === -1) {
      if (stack.length > 1) stack.pop();
    } else {
      leaf(t, top);
    }
  }
}

// open makes the element an opening token starts.
function open(t) {
  if (t.type === 'link_open') return linkOpen(t.attrGet('href'), t.attrGet('title'));
  const el = h(tags.has(t.tag) ? t.tag : 'span');
  if (t.type === 'ordered_list_open') {
    const start = Number(t.attrGet('start') ?? 1);
    if (Number.isInteger(start) && start !== 1) el.setAttribute('start', String(start));
  }
  // A table column's alignment, as a class: the page allows no inline style.
  const align = /text-align:(left|center|right)/.exec(t.attrGet('style') || '');
  if (align) el.className = 'align-' + align[1];
  return el;
}

function linkOpen(href, title) {
  const url = linkURL(href);
  if (!url) return h('span', { class: 'unsafe-link' });
  return h('a', { href: url, title: title || null, ...linkAttrs });
}

// leaf appends a token that holds no others (text, code, a break, a rule,
// an image) or an inline token's children to parent.
function leaf(t, parent) {
  switch (t.type) {
    case 'inline': build(t.children || [], parent); return;
    case 'code_inline': parent.append(h('code', {}, t.content)); return;
    case 'softbreak': case 'hardbreak': parent.append(h('br')); return;
    case 'hr': parent.append(h('hr')); return;
    case 'fence': case 'code_block': {
      const lang = /^[\w+-]{1,32}$/.exec((t.info || '').trim().split(/\s+/)[0]);
      parent.append(h('pre', {}, h('code', { class: lang ? 'language-' + lang[0] : null }, t.content.replace(/\n$/, ''))));
      return;
    }
    case 'image': {
      // No images from reports: a link to it, labelled with its alt text.
      const el = linkOpen(t.attrGet('src'), t.attrGet('title'));
      el.classList.add('image-link');
      build(t.children || [], el);
      if (!el.textContent) el.append(t.attrGet('src') || 'image');
      parent.append(el);
      return;
    }
    default:
      // text, and anything else that carries text (html_* cannot occur
      // with html off, and would be shown as text all the same).
      if (t.content) parent.append(document.createTextNode(t.content));
  }
}
