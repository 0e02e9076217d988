// router.ts - the console lives under /app/ (galaxyd serves /app/index.html
// for any path under /app/ that is not a file). Routing is preact-iso's:
// <LocationProvider scope={SCOPE}> follows the history API and takes clicks
// on links under /app without a page load, <Router> picks the page (main.tsx).
// This file adds the /app prefix and the console's two ways to move:
// navigate() pushes a new entry (or replaces the current one), setQuery()
// replaces the query string of the current page (filters) without a new entry.
import { useLocation } from 'preact-iso';
import { useMemo } from 'preact/hooks';

export const BASE = '/app';

/** Links the router follows itself: those under BASE. */
export const SCOPE = /^\/app(?:[/?]|$)/;

export interface Route {
  path: string; // without the /app prefix, e.g. "/tasks/12"
  query: URLSearchParams;
  navigate: (to: string, replace?: boolean) => void;
  setQuery: (q: Record<string, string | undefined>) => void;
}

export function href(to: string): string {
  return BASE + (to.startsWith('/') ? to : `/${to}`);
}

/** The current page and the functions that move; re-renders on navigation. */
export function useRoute(): Route {
  const loc = useLocation();
  return useMemo(() => {
    const path = (loc.path.startsWith(BASE) ? loc.path.slice(BASE.length) : loc.path) || '/';
    return {
      path,
      query: new URL(loc.url, window.location.origin).searchParams,
      navigate: (to, replace = false) => {
        loc.route(href(to), replace);
        window.scrollTo(0, 0);
      },
      setQuery: (q) => {
        const p = new URLSearchParams();
        for (const [k, v] of Object.entries(q)) if (v) p.set(k, v);
        const s = p.toString();
        loc.route(BASE + path + (s ? `?${s}` : ''), true);
      },
    };
  }, [loc.url]);
}
