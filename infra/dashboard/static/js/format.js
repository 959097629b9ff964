// Formatting of the values runs carry.
import { h, classWord } from './dom.js';

const ints = new Intl.NumberFormat('en-US');

export function fmtInt(n) { return ints.format(Number(n) || 0); }

// count writes n things, in the singular for one: "1 agent", "3 agents".
export function count(n, one, many = one + 's') { return fmtInt(n) + ' ' + (Number(n) === 1 ? one : many); }
export function fmtCost(c) { return '$' + (Number(c) || 0).toFixed(4); }

// fmtTokenParts is what a count of tokens held of cached prompt tokens
// and, when there were any, reasoning tokens: " (600 cached)" or
// " (600 cached, 50 reasoning)".
export function fmtTokenParts(u) {
  const parts = [fmtInt(u.cached_tokens) + ' cached'];
  if (Number(u.reasoning_tokens) > 0) parts.push(fmtInt(u.reasoning_tokens) + ' reasoning');
  return ' (' + parts.join(', ') + ')';
}

// usageCells are the Tokens cell of a run or of totals, with its reasoning
// tokens under the count when there are any, and the Cached cell.
export function usageCells(u) {
  return [
    h('td', { class: 'num tokens' }, fmtInt(u.tokens),
      Number(u.reasoning_tokens) > 0 ? h('div', { class: 'muted reasoning' }, fmtInt(u.reasoning_tokens) + ' reasoning') : null),
    h('td', { class: 'num cached' }, fmtInt(u.cached_tokens)),
  ];
}

// fmtEstimated says how many model calls of a tree were settled at their
// estimate (their worker died with the call in flight), or '' when none.
export function fmtEstimated(n) {
  n = Number(n) || 0;
  if (n === 0) return '';
  return n === 1 ? '1 call at its estimate' : fmtInt(n) + ' calls at their estimate';
}

// fmtTime is the time of day of an RFC 3339 time, in the browser's time
// zone and locale, or ''.
export function fmtTime(s) {
  const d = s ? new Date(s) : null;
  return d && !isNaN(d) ? d.toLocaleTimeString() : '';
}

// fmtDateTime is the date and time of an RFC 3339 time, in the browser's
// time zone and locale, or ''.
export function fmtDateTime(s) {
  const d = s ? new Date(s) : null;
  return d && !isNaN(d) ? d.toLocaleString() : '';
}

// fmtBytes is a size in bytes as people read it: "512 B", "4.2 kB", "1.3 MB".
export function fmtBytes(n) {
  n = Number(n) || 0;
  if (n < 1000) return fmtInt(n) + ' B';
  if (n < 1e6) return (n / 1e3).toFixed(1) + ' kB';
  return (n / 1e6).toFixed(1) + ' MB';
}

// ago is how long before now s was, roughly: "5s ago", "3m ago".
export function ago(s) {
  const d = s ? new Date(s) : null;
  if (!d || isNaN(d)) return '';
  const sec = Math.max(0, Math.round((Date.now() - d.getTime()) / 1000));
  if (sec < 60) return sec + 's ago';
  if (sec < 3600) return Math.floor(sec / 60) + 'm ago';
  if (sec < 86400) return Math.floor(sec / 3600) + 'h ago';
  return Math.floor(sec / 86400) + 'd ago';
}

// truncate cuts s to n characters (code points, never half of one).
export function truncate(s, n) {
  const a = Array.from(String(s ?? ''));
  return a.length > n ? a.slice(0, n - 1).join('') + '…' : a.join('');
}

// badge shows a run's status.
export function badge(status) {
  return h('span', { class: 'badge s-' + classWord(status) }, status || '?');
}

// endStatuses are the statuses a run ends with, as the API's Status enum
// (infra/httpapi/openapi.yaml) and jobs.Run.Ended have them; a test in
// infra/dashboard checks that the three agree.
export const endStatuses = Object.freeze(['succeeded', 'failed', 'timed_out']);

// ended reports whether a run has finished, one way or the other.
export function ended(run) { return endStatuses.includes(run.status); }
