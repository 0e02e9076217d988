// ui.tsx - the small shared pieces every page uses: links, a section
// navigation and in-page tabs, state badges, loading / empty / error / "not
// available yet" states, labelled form fields, a modal and a confirmation
// dialog (both keep the focus while open), toasts, and two hooks (useAsync,
// useInterval). They are built to pass WCAG 2.1 AA (docs/ui.md): pages built
// from them get labels, names, focus and keyboard use right.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useId, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError, isMissingEndpoint, type State } from '../api';
import { href } from '../router';
import { STATE_LABEL } from '../states';

/** A link inside the console: the router follows it without a page load. */
export function Link(props: {
  to: string;
  class?: string;
  children: ComponentChildren;
  title?: string;
  label?: string; // aria-label, when the visible text is not the name
  current?: boolean; // aria-current="page": the link to the page shown
}) {
  return (
    <a href={href(props.to)} class={props.class} title={props.title} aria-label={props.label} aria-current={props.current ? 'page' : undefined}>
      {props.children}
    </a>
  );
}

/**
 * Links between the sections of one page (each section has its own URL,
 * such as the admin pages): a navigation landmark of plain links, the one
 * shown marked aria-current. For content switched inside one URL, use Tabs.
 */
export function SectionNav(props: { label: string; items: { to: string; label: ComponentChildren }[]; current: string }) {
  return (
    <nav class="tabs" aria-label={props.label}>
      {props.items.map((t) => (
        <Link key={t.to} to={t.to} class={`tab ${props.current === t.to ? 'active' : ''}`} current={props.current === t.to}>
          {t.label}
        </Link>
      ))}
    </nav>
  );
}

/**
 * Tabs inside one page (WAI-ARIA tabs): a tablist of buttons, the chosen
 * one aria-selected and the only one in the Tab order; Left/Right arrows,
 * Home and End move to another tab and choose it; the panel below holds the
 * chosen tab's content (children) and is labelled by its tab.
 */
export function Tabs<K extends string>(props: {
  label: string;
  tabs: { id: K; label: ComponentChildren }[];
  selected: K;
  onSelect: (id: K) => void;
  children: ComponentChildren;
  class?: string;
}) {
  const base = useId();
  const list = useRef<HTMLDivElement>(null);
  const tabId = (id: string) => `${base}-tab-${id}`;
  const key = (e: KeyboardEvent, i: number) => {
    const n = props.tabs.length;
    const to = e.key === 'ArrowRight' ? (i + 1) % n : e.key === 'ArrowLeft' ? (i - 1 + n) % n : e.key === 'Home' ? 0 : e.key === 'End' ? n - 1 : -1;
    if (to < 0) return;
    e.preventDefault();
    props.onSelect(props.tabs[to].id);
    list.current?.querySelectorAll<HTMLElement>('[role="tab"]')[to]?.focus();
  };
  return (
    <div class={props.class}>
      <div class="tabs" role="tablist" aria-label={props.label} ref={list}>
        {props.tabs.map((t, i) => {
          const on = t.id === props.selected;
          return (
            <button
              key={t.id}
              type="button"
              role="tab"
              id={tabId(t.id)}
              class={`tab ${on ? 'active' : ''}`}
              aria-selected={on}
              aria-controls={`${base}-panel`}
              tabIndex={on ? 0 : -1}
              onClick={() => props.onSelect(t.id)}
              onKeyDown={(e) => key(e, i)}
            >
              {t.label}
            </button>
          );
        })}
      </div>
      <div role="tabpanel" id={`${base}-panel`} aria-labelledby={tabId(props.selected)} tabIndex={0} class="tabpanel">
        {props.children}
      </div>
    </div>
  );
}

export function StateBadge({ state }: { state: State | null | undefined }) {
  if (!state) return <span class="badge st-none">No runs</span>;
  return (
    <span class={`badge st-${state}`} data-state={state}>
      <span class="dot" />
      {STATE_LABEL[state] ?? state}
    </span>
  );
}

export function Spinner() {
  // an image named "loading": a bare span may not carry a name (ARIA)
  return <span class="spinner" role="img" aria-label="loading" />;
}

export function Loading({ what }: { what?: string }) {
  return (
    <div class="loading" role="status">
      <Spinner /> Loading{what ? ` ${what}` : ''}…
    </div>
  );
}

export function Empty(props: { title: string; children?: ComponentChildren; icon?: string }) {
  return (
    <div class="empty">
      <div class="empty-icon" aria-hidden="true">
        {props.icon ?? '◌'}
      </div>
      <div class="empty-title">{props.title}</div>
      {props.children && <div class="empty-body">{props.children}</div>}
    </div>
  );
}

/** The state shown where galaxyd has no endpoint for a feature yet. */
export function Unavailable(props: { feature: string; endpoint: string; children?: ComponentChildren }) {
  return (
    <div class="unavailable" data-unavailable={props.endpoint}>
      <div class="unavailable-title">{props.feature} is not available yet</div>
      <div class="unavailable-body">
        This galaxyd does not serve <code>{props.endpoint}</code>. {props.children}
      </div>
    </div>
  );
}

export function errorText(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}

export function ErrorBanner({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  if (!error) return null;
  const forbidden = error instanceof ApiError && error.status === 403;
  return (
    <div class={`banner ${forbidden ? 'banner-warn' : 'banner-error'}`} role="alert">
      <span>{errorText(error)}</span>
      {onRetry && (
        <button class="btn btn-small" onClick={onRetry}>
          Retry
        </button>
      )}
    </div>
  );
}

/** What the keyboard can reach inside a dialog, in order. */
const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"]), [contenteditable="true"]';

function focusables(root: HTMLElement): HTMLElement[] {
  return Array.from(root.querySelectorAll<HTMLElement>(FOCUSABLE)).filter((e) => e.offsetParent !== null || e === document.activeElement);
}

/**
 * A modal dialog. While it is open the focus is inside it: it moves to the
 * first field (or the first button) when the dialog opens, Tab and Shift+Tab
 * go round within it, Escape or the backdrop closes it, and on closing the
 * focus goes back to what had it before (the button that opened it).
 */
export function Modal(props: {
  title: string;
  onClose: () => void;
  children: ComponentChildren;
  footer?: ComponentChildren;
  wide?: boolean;
}) {
  const box = useRef<HTMLDivElement>(null);
  const titleId = useId();
  const opener = useRef<HTMLElement | null>(null);
  // Focus goes back before the dialog leaves the page: were the focus still
  // in a removed dialog, the browser would move it to the body.
  const giveBack = () => {
    const o = opener.current;
    if (o && o.isConnected && o !== document.body) o.focus();
  };
  const close = useRef(props.onClose);
  close.current = () => {
    giveBack();
    props.onClose();
  };
  useEffect(() => {
    opener.current = document.activeElement as HTMLElement | null;
    const root = box.current;
    if (root && !root.contains(document.activeElement)) {
      const first = root.querySelector<HTMLElement>('.modal-body ' + CONTROL) ?? focusables(root).find((e) => !e.classList.contains('modal-close')) ?? root;
      first.focus();
    }
    const key = (e: KeyboardEvent) => {
      if (!root) return;
      if (e.key === 'Escape') {
        e.preventDefault();
        close.current();
        return;
      }
      if (e.key !== 'Tab') return;
      const list = focusables(root);
      if (!list.length) {
        e.preventDefault();
        root.focus();
        return;
      }
      const first = list[0];
      const last = list[list.length - 1];
      const inside = root.contains(document.activeElement);
      if (e.shiftKey && (!inside || document.activeElement === first || document.activeElement === root)) {
        e.preventDefault();
        last.focus();
      } else if (!e.shiftKey && (!inside || document.activeElement === last)) {
        e.preventDefault();
        first.focus();
      }
    };
    // focus that leaves by other means (a click outside, a script) comes back
    const keep = (e: FocusEvent) => {
      if (root && e.target instanceof Node && !root.contains(e.target)) (focusables(root)[0] ?? root).focus();
    };
    document.addEventListener('keydown', key);
    document.addEventListener('focusin', keep);
    return () => {
      document.removeEventListener('keydown', key);
      document.removeEventListener('focusin', keep);
      // closed by its owner (a confirmed action): the same, and once more
      // after the removal if the browser dropped the focus on the body
      giveBack();
      window.requestAnimationFrame(() => {
        if (!document.activeElement || document.activeElement === document.body) giveBack();
      });
    };
  }, []);
  return (
    <div class="modal-backdrop" onClick={(e) => e.target === e.currentTarget && close.current()}>
      <div
        ref={box}
        class={`modal ${props.wide ? 'modal-wide' : ''}`}
        role="dialog"
        aria-modal="true"
        aria-labelledby={titleId}
        tabIndex={-1}
      >
        <div class="modal-head">
          <h2 id={titleId}>{props.title}</h2>
          <button type="button" class="icon-btn modal-close" aria-label="Close" onClick={() => close.current()}>
            ×
          </button>
        </div>
        <div class="modal-body">{props.children}</div>
        {props.footer && <div class="modal-foot">{props.footer}</div>}
      </div>
    </div>
  );
}

export function Confirm(props: {
  title: string;
  body: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => Promise<void> | void;
  onClose: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<unknown>(null);
  const go = async () => {
    setBusy(true);
    setErr(null);
    try {
      await props.onConfirm();
      props.onClose();
    } catch (e) {
      setErr(e);
      setBusy(false);
    }
  };
  return (
    <Modal
      title={props.title}
      onClose={props.onClose}
      footer={
        <>
          <button class="btn" onClick={props.onClose} disabled={busy}>
            Cancel
          </button>
          <button class={`btn ${props.danger ? 'btn-danger' : 'btn-primary'}`} onClick={go} disabled={busy} data-confirm>
            {busy ? <Spinner /> : null} {props.confirmLabel}
          </button>
        </>
      }
    >
      <div>{props.body}</div>
      <ErrorBanner error={err} />
    </Modal>
  );
}

/** The form controls a label can name. */
const CONTROL = 'input:not([type="hidden"]), select, textarea';

/**
 * A labelled form row with its inline error. The label is tied to the
 * field's control (the first input, select or textarea inside it, or the
 * one whose id is given): the control gets an id of its own if it has none,
 * and the hint or error is its description (aria-describedby), the error
 * also marking it aria-invalid.
 */
export function Field(props: {
  label: string;
  hint?: ComponentChildren;
  error?: string | null;
  children: ComponentChildren;
  field?: string;
  class?: string;
  id?: string; // the control's id, when it is not the first control inside
}) {
  const auto = useId();
  const box = useRef<HTMLDivElement>(null);
  const labelRef = useRef<HTMLLabelElement>(null);
  const noteId = `${auto}-note`;
  const hasNote = !!(props.error || props.hint);
  // After every render: the children may have swapped their control.
  useLayoutEffect(() => {
    const control = (props.id ? document.getElementById(props.id) : box.current?.querySelector(CONTROL)) as HTMLElement | null;
    if (!control || !labelRef.current) return;
    if (!control.id) control.id = `${auto}-control`;
    labelRef.current.htmlFor = control.id;
    const described = (control.getAttribute('aria-describedby') ?? '').split(' ').filter((x) => x && x !== noteId);
    if (hasNote) described.push(noteId);
    if (described.length) control.setAttribute('aria-describedby', described.join(' '));
    else control.removeAttribute('aria-describedby');
    if (props.error) control.setAttribute('aria-invalid', 'true');
    else control.removeAttribute('aria-invalid');
  });
  return (
    <div ref={box} class={`field ${props.error ? 'has-error' : ''} ${props.class ?? ''}`} data-field={props.field}>
      <label ref={labelRef} class="field-label" for={props.id}>
        {props.label}
      </label>
      {props.children}
      {props.error ? (
        <div class="field-error" role="alert" id={noteId}>
          {props.error}
        </div>
      ) : props.hint ? (
        <div class="field-hint" id={noteId}>
          {props.hint}
        </div>
      ) : null}
    </div>
  );
}

// ---- toasts ---------------------------------------------------------------

type Toast = { id: number; text: string; kind: 'ok' | 'error' };
let toastSeq = 0;
const toastListeners = new Set<(t: Toast[]) => void>();
let toasts: Toast[] = [];

export function toast(text: string, kind: 'ok' | 'error' = 'ok'): void {
  const t = { id: ++toastSeq, text, kind };
  toasts = [...toasts, t];
  toastListeners.forEach((l) => l(toasts));
  window.setTimeout(() => {
    toasts = toasts.filter((x) => x.id !== t.id);
    toastListeners.forEach((l) => l(toasts));
  }, 4000);
}

export function Toasts() {
  const [list, setList] = useState<Toast[]>(toasts);
  useEffect(() => {
    toastListeners.add(setList);
    return () => void toastListeners.delete(setList);
  }, []);
  return (
    <div class="toasts" aria-live="polite">
      {list.map((t) => (
        <div key={t.id} class={`toast toast-${t.kind}`}>
          {t.text}
        </div>
      ))}
    </div>
  );
}

// ---- hooks ----------------------------------------------------------------

export interface Async<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  missing: boolean; // the endpoint does not exist in this galaxyd
  reload: () => void;
  setData: (t: T) => void;
}

/** Run fn when deps change; keeps the last data while reloading. */
export function useAsync<T>(fn: () => Promise<T>, deps: unknown[]): Async<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const seq = useRef(0);
  useEffect(() => {
    const my = ++seq.current;
    setLoading(true);
    fn().then(
      (d) => {
        if (my !== seq.current) return;
        setData(d);
        setError(null);
        setLoading(false);
      },
      (e) => {
        if (my !== seq.current) return;
        setError(e);
        setLoading(false);
      },
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, missing: isMissingEndpoint(error), reload, setData };
}

/** Call fn every ms while enabled (and the tab is visible). */
export function useInterval(fn: () => void, ms: number, enabled = true): void {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => {
    if (!enabled) return;
    const id = window.setInterval(() => {
      if (document.visibilityState === 'visible') ref.current();
    }, ms);
    return () => window.clearInterval(id);
  }, [ms, enabled]);
}

/** What can scroll sideways or down in the console: cards holding tables,
 * table wrappers, code and log blocks. */
const SCROLLERS = '.card, .table-wrap, pre, .log, .scroll';

function scrolls(e: HTMLElement): boolean {
  const st = getComputedStyle(e);
  const x = /(auto|scroll)/.test(st.overflowX) && e.scrollWidth > e.clientWidth + 1;
  const y = /(auto|scroll)/.test(st.overflowY) && e.scrollHeight > e.clientHeight + 1;
  return x || y;
}

/**
 * Keeps every region that scrolls reachable by keyboard (WCAG 2.1.1): a
 * card, table wrapper or code block whose content overflows (a wide table
 * at a phone's width, a long spec) and holds nothing focusable becomes a tab
 * stop (tabindex 0), so the arrow keys scroll it; when it no longer
 * overflows it stops being one. Checked after each change of the page
 * (once per frame at most) and on resize. Used once, by the app's root.
 */
export function useScrollFocus(): void {
  useEffect(() => {
    let queued = 0;
    const check = () => {
      queued = 0;
      for (const e of document.querySelectorAll<HTMLElement>(SCROLLERS)) {
        const mine = e.hasAttribute('data-scroll-focus');
        if (e.hasAttribute('tabindex') && !mine) continue;
        const want = scrolls(e) && !e.querySelector(FOCUSABLE);
        if (want && !mine) {
          e.setAttribute('tabindex', '0');
          e.setAttribute('data-scroll-focus', '');
        } else if (!want && mine) {
          e.removeAttribute('tabindex');
          e.removeAttribute('data-scroll-focus');
        }
      }
    };
    const queue = () => {
      if (!queued) queued = window.requestAnimationFrame(check);
    };
    const seen = new MutationObserver(queue);
    seen.observe(document.body, { childList: true, subtree: true, characterData: true });
    window.addEventListener('resize', queue);
    queue();
    return () => {
      seen.disconnect();
      window.removeEventListener('resize', queue);
      if (queued) window.cancelAnimationFrame(queued);
    };
  }, []);
}

export function PageHead(props: { title: ComponentChildren; sub?: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <div class="page-head">
      <div>
        <h1>{props.title}</h1>
        {props.sub && <div class="page-sub">{props.sub}</div>}
      </div>
      {props.actions && <div class="page-actions">{props.actions}</div>}
    </div>
  );
}

/** The value of the input, select or textarea an event came from. */
export const val = (e: { currentTarget: EventTarget | null }): string =>
  (e.currentTarget as HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement).value;
