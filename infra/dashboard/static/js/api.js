// The REST API as the dashboard calls it: same origin, the key of the
// signed-in user as a bearer token. The key lives in sessionStorage only,
// so it ends with the browser tab.

const keyName = 'gb.apiKey';

// base is the path the API is served under: the dashboard's own path
// without its /ui/ part (empty when served at the root of the origin).
const base = location.pathname.slice(0, Math.max(0, location.pathname.lastIndexOf('/ui/')));

// session holds the API key of this browser tab.
export const session = {
  get key() { return sessionStorage.getItem(keyName) || ''; },
  set(key) { sessionStorage.setItem(keyName, key); },
  clear() { sessionStorage.removeItem(keyName); },
};

// APIError is an answer that is not a success: status, the API's error
// code, field and message.
export class APIError extends Error {
  constructor(status, code, field, message) {
    super(message || code);
    this.status = status;
    this.code = code;
    this.field = field || '';
  }
}

// api calls path (from /v1/...) and returns the decoded JSON answer, or
// throws APIError. opts: method, body (sent as JSON), signal, key.
export async function api(path, opts = {}) {
  const headers = { Authorization: 'Bearer ' + (opts.key ?? session.key) };
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(base + path, {
    method: opts.method || 'GET',
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    signal: opts.signal,
    cache: 'no-store',
    credentials: 'omit',
  });
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!res.ok) {
    const e = (data && data.error) || {};
    throw new APIError(res.status, e.code || 'http_' + res.status, e.field, e.message || res.statusText || 'request failed');
  }
  return data;
}

// sleep resolves after ms, or at once when signal aborts.
export function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal && signal.aborted) return resolve();
    const t = setTimeout(resolve, ms);
    if (signal) signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

// streamEvents reads the Server-Sent Events of path (a tree's event
// stream) after event number lastID, calling onEvents with each batch of
// decoded events as they come. It uses fetch rather than EventSource,
// which cannot send the bearer key, and so sends Last-Event-ID itself. It
// resolves when the connection ends: { ended } says whether the stream's
// end event came, lastID is the number of the last event handed on, and
// progressed whether anything came at all. An answer that is not a stream
// throws APIError (404 from a server without the route, 501 from one
// behind a gateway that cannot stream).
export async function streamEvents(path, { lastID = 0, signal, onEvents }) {
  const headers = { Authorization: 'Bearer ' + session.key, Accept: 'text/event-stream' };
  if (lastID > 0) headers['Last-Event-ID'] = String(lastID);
  const res = await fetch(base + path, { headers, signal, cache: 'no-store', credentials: 'omit' });
  if (!res.ok || !(res.headers.get('Content-Type') || '').startsWith('text/event-stream')) {
    const text = await res.text();
    let e = {};
    try { e = (JSON.parse(text) || {}).error || {}; } catch { e = {}; }
    const status = res.ok ? 501 : res.status;
    throw new APIError(status, e.code || 'http_' + status, e.field, e.message || res.statusText || 'no event stream');
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '', event = '', data = '', progressed = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return { ended: false, lastID, progressed };
      progressed = true;
      buf += value;
      const batch = [];
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        let line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.endsWith('\r')) line = line.slice(0, -1);
        if (line !== '') {
          if (line.startsWith(':')) continue; // a heartbeat
          const c = line.indexOf(':');
          const k = c < 0 ? line : line.slice(0, c);
          let v = c < 0 ? '' : line.slice(c + 1);
          if (v.startsWith(' ')) v = v.slice(1);
          if (k === 'event') event = v;
          else if (k === 'data') data += v;
          continue;
        }
        if (event === 'end') {
          if (batch.length) onEvents(batch);
          return { ended: true, lastID, progressed };
        }
        if (event === '' && data !== '') {
          const ev = JSON.parse(data);
          if (ev.n > lastID) { lastID = ev.n; batch.push(ev); }
        }
        event = ''; data = '';
      }
      if (batch.length) onEvents(batch);
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
