// router.ts - history-API routing under /app/ (galaxyd serves
// /app/index.html for any path under /app/ that is not a file).
// useRoute() re-renders on navigation; navigate() pushes a new entry.
import { useEffect, useState } from 'preact/hooks';

const BASE = '/app';

export interface Route {
  path: string; // without the /app prefix, e.g. "/tasks/12"
  query: URLSearchParams;
}

function current(): Route {
  let p = window.location.pathname;
  if (p.startsWith(BASE)) p = p.slice(BASE.length);
  if (!p || p === '/') p = '/';
  return { path: p.replace(/\/+$/, '') || '/', query: new URLSearchParams(window.location.search) };
}

const listeners = new Set<() => void>();

export function navigate(to: string, replace = false): void {
  const url = BASE + (to.startsWith('/') ? to : `/${to}`);
  if (replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  listeners.forEach((l) => l());
  window.scrollTo(0, 0);
}

/** Replace the query string of the current page (filters) without a new entry. */
export function setQuery(q: Record<string, string | undefined>): void {
  const r = current();
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v) p.set(k, v);
  const s = p.toString();
  window.history.replaceState(null, '', BASE + r.path + (s ? `?${s}` : ''));
  listeners.forEach((l) => l());
}

export function href(to: string): string {
  return BASE + to;
}

export function useRoute(): Route {
  const [r, setR] = useState(current);
  useEffect(() => {
    const f = () => setR(current());
    listeners.add(f);
    window.addEventListener('popstate', f);
    return () => {
      listeners.delete(f);
      window.removeEventListener('popstate', f);
    };
  }, []);
  return r;
}

/** Match "/tasks/:id" style patterns; returns the params or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split('/');
  const b = path.split('/');
  if (a.length !== b.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i].startsWith(':')) out[a[i].slice(1)] = decodeURIComponent(b[i]);
    else if (a[i] !== b[i]) return null;
  }
  return out;
}
