// ui.tsx - the small shared pieces every page uses: links, state badges,
// loading / empty / error / "not available yet" states, a modal and a
// confirmation dialog, toasts, and two hooks (useAsync, useInterval).
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
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
  return <span class="spinner" aria-label="loading" />;
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

export function Modal(props: {
  title: string;
  onClose: () => void;
  children: ComponentChildren;
  footer?: ComponentChildren;
  wide?: boolean;
}) {
  useEffect(() => {
    const k = (e: KeyboardEvent) => e.key === 'Escape' && props.onClose();
    window.addEventListener('keydown', k);
    return () => window.removeEventListener('keydown', k);
  }, [props.onClose]);
  return (
    <div class="modal-backdrop" onClick={(e) => e.target === e.currentTarget && props.onClose()}>
      <div class={`modal ${props.wide ? 'modal-wide' : ''}`} role="dialog" aria-modal="true" aria-label={props.title}>
        <div class="modal-head">
          <h2>{props.title}</h2>
          <button class="icon-btn" aria-label="Close" onClick={props.onClose}>
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

/** A labelled form row with its inline error. */
export function Field(props: {
  label: string;
  hint?: ComponentChildren;
  error?: string | null;
  children: ComponentChildren;
  field?: string;
  class?: string;
}) {
  return (
    <div class={`field ${props.error ? 'has-error' : ''} ${props.class ?? ''}`} data-field={props.field}>
      <label class="field-label">{props.label}</label>
      {props.children}
      {props.error ? (
        <div class="field-error" role="alert">
          {props.error}
        </div>
      ) : props.hint ? (
        <div class="field-hint">{props.hint}</div>
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
