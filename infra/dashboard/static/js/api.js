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
