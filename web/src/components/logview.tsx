// logview.tsx - an instance's logs: a tab per attempt (the current one
// followed while it runs, earlier ones read from the blob archive), each
// line with its number and, when shown, the time executord read it (UTC);
// search within the log (next/previous, a count, the matches highlighted);
// download of the raw log or of the lines behind their times.
//
// Large logs: the lines are kept as an array and only the rows in view are
// in the page (fixed row height, no wrapping: long lines scroll sideways),
// so a log of a hundred thousand lines scrolls and searches without the
// page freezing. At most MAX_LINES are kept; beyond that the oldest go and
// the panel says so (the download has everything). Search looks through the
// lines held, case-insensitively, after a short pause in typing.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError, isMissingEndpoint } from '../api';
import { ErrorBanner, Tabs, Unavailable, useInterval } from './ui';

const MAX_LINES = 200_000;
const ROW = 18; // px, the CSS row height of .logv-row
const OVERSCAN = 30;

/** Set once galaxyd answered that it has no log endpoint. */
let logMissing: unknown = null;

type Loaded = {
  lines: string[]; // complete lines, and the last (maybe partial) one
  times: (number | undefined)[]; // UTC ms per line, when the log is stamped
  dropped: number; // lines dropped from the front (MAX_LINES)
  bytes: number;
  complete: boolean;
  stamped: boolean;
};

const EMPTY: Loaded = { lines: [], times: [], dropped: 0, bytes: 0, complete: false, stamped: false };

function fmtStamp(ms: number | undefined): string {
  if (ms === undefined) return ''.padEnd(13);
  return new Date(ms).toISOString().slice(11, 23) + 'Z';
}

/** Reads one attempt's log in chunks: all of it at once when it is over,
 * then (while the attempt runs) what is appended, every 1.5 s. */
function useAttemptLog(id: number, attempt: number, live: boolean) {
  const [log, setLog] = useState<Loaded>(EMPTY);
  const [err, setErr] = useState<unknown>(logMissing);
  const st = useRef({ key: '', offset: 0, busy: false, cur: EMPTY });
  const key = `${id}/${attempt}`;

  const pull = async () => {
    const s = st.current;
    if (s.key !== key) {
      s.key = key;
      s.offset = 0;
      s.cur = { ...EMPTY, lines: [], times: [] };
      setLog(s.cur);
    }
    if (s.busy || s.cur.complete) return;
    if (logMissing) return setErr(logMissing);
    s.busy = true;
    try {
      // Read until the end of what is there (an archived log in one go).
      for (let round = 0; round < 400; round++) {
        const r = await api.log(id, attempt, s.offset, true);
        if (s.key !== key) return;
        const cur = s.cur;
        const lines = cur.lines;
        const times = cur.times;
        if (r.data) {
          const parts = r.data.split('\n');
          if (lines.length === 0) lines.push('');
          lines[lines.length - 1] += parts[0];
          for (let i = 1; i < parts.length; i++) lines.push(parts[i]);
        }
        if (r.stamped && r.first_line !== undefined && r.lines) {
          r.lines.forEach((l, i) => {
            const at = r.first_line! - 1 + i - cur.dropped;
            if (at >= 0 && times[at] === undefined) times[at] = l[1];
          });
        }
        let dropped = cur.dropped;
        if (lines.length > MAX_LINES) {
          const n = lines.length - MAX_LINES;
          lines.splice(0, n);
          times.splice(0, n);
          dropped += n;
        }
        // galaxyd calls a log complete once the attempt is not running; an
        // attempt that is still to run (live here) is not.
        const done = !live && r.complete;
        s.cur = { lines, times, dropped, bytes: r.next_offset, complete: done, stamped: cur.stamped || !!r.stamped };
        s.offset = r.next_offset;
        setLog(s.cur);
        setErr(null);
        if (!r.data || done) break;
      }
    } catch (e) {
      if (isMissingEndpoint(e)) logMissing = e;
      if (s.key === key) setErr(e);
    } finally {
      s.busy = false;
    }
  };
  useEffect(() => void pull(), [key]);
  useInterval(pull, 1500, !log.complete && !isMissingEndpoint(err));
  return { log: st.current.key === key ? log : EMPTY, err };
}

/** The matches of q: [line index, start] in order. */
function findAll(lines: string[], q: string): [number, number][] {
  const out: [number, number][] = [];
  if (!q) return out;
  const needle = q.toLowerCase();
  for (let i = 0; i < lines.length && out.length < 100_000; i++) {
    const hay = lines[i].toLowerCase();
    for (let at = hay.indexOf(needle); at >= 0; at = hay.indexOf(needle, at + needle.length)) out.push([i, at]);
  }
  return out;
}

/** One line with its matches marked (the current one distinct). */
function Marked({ text, q, cur }: { text: string; q: string; cur: number }) {
  if (!q) return <>{text}</>;
  const low = text.toLowerCase();
  const needle = q.toLowerCase();
  const out = [];
  let from = 0;
  for (let at = low.indexOf(needle); at >= 0; at = low.indexOf(needle, at + needle.length)) {
    out.push(text.slice(from, at));
    out.push(
      <mark key={at} class={at === cur ? 'current' : undefined}>
        {text.slice(at, at + needle.length)}
      </mark>,
    );
    from = at + needle.length;
  }
  out.push(text.slice(from));
  return <>{out}</>;
}

function AttemptLog({ id, attempt, live }: { id: number; attempt: number; live: boolean }) {
  const { log, err } = useAttemptLog(id, attempt, live);
  const [times, setTimes] = useState(true);
  const [follow, setFollow] = useState(true);
  const [query, setQuery] = useState('');
  const [q, setQ] = useState(''); // the query searched, after a pause in typing
  const [pos, setPos] = useState(0);
  const [scroll, setScroll] = useState(0);
  const [height, setHeight] = useState(420);
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const t = setTimeout(() => setQ(query), 200);
    return () => clearTimeout(t);
  }, [query]);
  // The count follows the log as it grows; the position stays put.
  const matches = useMemo(() => findAll(log.lines, q), [log, q, log.lines.length]);
  useEffect(() => setPos(0), [q]);
  const current = matches.length ? matches[Math.min(pos, matches.length - 1)] : null;

  const show = (line: number) => {
    const el = box.current;
    if (!el) return;
    setFollow(false);
    el.scrollTop = Math.max(0, line * ROW - el.clientHeight / 2);
  };
  useEffect(() => {
    if (current) show(current[0]);
  }, [current?.[0], current?.[1], q]);
  useEffect(() => {
    const el = box.current;
    if (follow && el && !q) el.scrollTop = el.scrollHeight;
  }, [log, follow]);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    setHeight(el.clientHeight || 420);
    const ro = new ResizeObserver(() => setHeight(el.clientHeight || 420));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  const step = (d: number) => {
    if (!matches.length) return;
    setPos((p) => (Math.min(p, matches.length - 1) + d + matches.length) % matches.length);
  };

  if (isMissingEndpoint(err))
    return (
      <Unavailable feature="The log" endpoint={`GET /api/v1/instances/${id}/log`}>
        Logs will show here once galaxyd serves them.
      </Unavailable>
    );
  const noLog = err instanceof ApiError && err.status === 404;
  // A newline ends a line: the empty string after the last one is no line.
  const n = log.lines.length && log.lines[log.lines.length - 1] === '' ? log.lines.length - 1 : log.lines.length;
  const first = Math.max(0, Math.floor(scroll / ROW) - OVERSCAN);
  const last = Math.min(n, Math.ceil((scroll + height) / ROW) + OVERSCAN);
  const gutter = String(log.dropped + n).length;
  const stampsShown = times && log.stamped;
  const dl = `/api/v1/instances/${id}/log/download?attempt=${attempt}`;
  const searchId = `log-search-${id}-${attempt}`;
  return (
    <div class="logv">
      <div class="log-head">
        <span class="small muted" data-testid="log-status">
          attempt {attempt} · {log.bytes.toLocaleString()} bytes {log.complete ? '· complete' : live ? '· following' : '· loading'}
          {log.dropped ? ` · the first ${log.dropped.toLocaleString()} lines are not shown (download them)` : ''}
        </span>
        <span class="logv-tools">
          <label class="small">
            <input type="checkbox" checked={times} onChange={() => setTimes(!times)} data-testid="log-times" /> Times (UTC)
          </label>
          {live ? (
            <label class="small">
              <input type="checkbox" checked={follow} onChange={() => setFollow(!follow)} /> Follow
            </label>
          ) : null}
          <a class="btn small" href={dl} download data-testid="log-download">
            Download
          </a>
          <a class="btn small" href={`${dl}&timestamps=1`} download data-testid="log-download-times">
            With times
          </a>
        </span>
      </div>
      <div class="logv-search" role="search">
        <label for={searchId} class="small">
          Search
        </label>
        <input
          id={searchId}
          type="search"
          value={query}
          placeholder="text in this log"
          data-testid="log-search"
          onInput={(e) => setQuery(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter') {
              e.preventDefault();
              if (query !== q) setQ(query);
              else step(e.shiftKey ? -1 : 1);
            }
          }}
        />
        <button type="button" class="btn small" onClick={() => step(-1)} disabled={!matches.length} aria-label="Previous match">
          ↑
        </button>
        <button type="button" class="btn small" onClick={() => step(1)} disabled={!matches.length} aria-label="Next match">
          ↓
        </button>
        <span class="small muted" data-testid="log-matches" aria-live="polite">
          {q ? (matches.length ? `${Math.min(pos, matches.length - 1) + 1} of ${matches.length.toLocaleString()}` : 'no match') : ''}
        </span>
      </div>
      {err && !noLog ? <ErrorBanner error={err} /> : null}
      <div
        class="log logv-box"
        ref={box}
        data-testid="log"
        data-lines={n}
        tabIndex={0}
        role="log"
        aria-label={`Log of attempt ${attempt}`}
        onScroll={(e) => {
          const el = e.currentTarget;
          setScroll(el.scrollTop);
          if (live) setFollow(el.scrollHeight - el.scrollTop - el.clientHeight < 24);
        }}
      >
        {n === 0 ? (
          <div class="logv-empty">{noLog ? 'No log yet for this attempt.' : log.complete ? 'This attempt wrote nothing.' : 'Waiting for output…'}</div>
        ) : (
          <div style={{ height: `${n * ROW}px`, position: 'relative' }}>
            <div style={{ position: 'absolute', top: `${first * ROW}px`, left: 0, minWidth: '100%' }}>
              {log.lines.slice(first, Math.min(last, n)).map((text, k) => {
                const i = first + k;
                const hit = current && current[0] === i ? current[1] : -1;
                return (
                  <div class={`logv-row ${hit >= 0 ? 'hit' : ''}`} key={i} data-line={log.dropped + i + 1}>
                    <span class="logv-no" aria-hidden="true">
                      {String(log.dropped + i + 1).padStart(gutter)}
                    </span>
                    {stampsShown ? <span class="logv-ts">{fmtStamp(log.times[i])}</span> : null}
                    <span class="logv-text">
                      <Marked text={text} q={q} cur={hit} />
                    </span>
                  </div>
                );
              })}
            </div>
          </div>
        )}
      </div>
    </div>
  );
}

/** The logs of an instance: a tab per attempt, the current one selected
 * (and selected again when a new attempt starts). */
export function LogView({ id, attempt, finished }: { id: number; attempt: number; finished: boolean }) {
  const [sel, setSel] = useState(attempt);
  const seen = useRef(attempt);
  useEffect(() => {
    if (seen.current !== attempt) {
      seen.current = attempt;
      setSel(attempt);
    }
  }, [attempt]);
  const n = Math.max(1, attempt);
  const tabs = Array.from({ length: n }, (_, i) => ({
    id: String(i + 1),
    label: `Attempt ${i + 1}${i + 1 === n ? (finished ? '' : ' (current)') : ''}`,
  }));
  const cur = Math.min(Math.max(1, sel), n);
  return (
    <Tabs label="Attempts" tabs={tabs} selected={String(cur)} onSelect={(k) => setSel(Number(k))} class="logv-tabs">
      <AttemptLog key={`${id}-${cur}`} id={id} attempt={cur} live={cur === n && !finished} />
    </Tabs>
  );
}
