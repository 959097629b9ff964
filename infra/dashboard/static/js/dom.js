// DOM helpers. Everything the dashboard shows is built with these: text is
// always a text node, never parsed as HTML, and links take http(s) URLs only.

// h makes an element. attrs: class, on<event> listeners, or attributes (set
// with setAttribute, so a value is never markup); children: nodes, strings
// (made text nodes), arrays of them, or null/false (skipped).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  add(el, children);
  return el;
}

// add appends children to el as h does.
export function add(el, children) {
  for (const c of [children].flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// fill replaces el's children by children, as add appends them.
export function fill(el, ...children) {
  el.replaceChildren();
  return add(el, children);
}

// safeURL returns the normalized URL when it is absolute http or https,
// else null: javascript:, data: and relative URLs never become links.
export function safeURL(s) {
  try {
    const u = new URL(String(s));
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
}

// extLink is a link that opens url in a new tab when url is http(s), else
// the text alone.
export function extLink(url, text) {
  const u = safeURL(url);
  const label = text === undefined || text === '' ? String(url) : text;
  if (!u) return h('span', { class: 'unsafe-link' }, label);
  return h('a', { href: u, target: '_blank', rel: 'noopener noreferrer nofollow' }, label);
}

// classWord keeps a class name made from data to lowercase letters and
// underscores.
export function classWord(s) {
  return /^[a-z_]{1,32}$/.test(s) ? s : 'other';
}
