// backfill.tsx - the backfill dialog: pick a date range, see how many fire
// times of the task's schedule it covers (from /schedule/next), choose
// whether the downstream tasks' cycles come too (a dry run counts them) and
// how keplerd paces the cycles (all at once, one at a time, or at most N),
// then create the instances (POST /tasks/{id}/backfill; idempotent, at most
// 1000, one transaction).
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, type BackfillOptions, type BackfillResult, type Task } from '../api';
import { fmtTime, localToIso, toLocalInput } from '../format';
import { Field, Link, Modal, Spinner, errorText, val } from './ui';

export function BackfillDialog({ task, onClose, onDone }: { task: Task; onClose: () => void; onDone?: () => void }) {
  const now = new Date();
  const dayAgo = new Date(now.getTime() - 24 * 3600 * 1000);
  const [from, setFrom] = useState(toLocalInput(dayAgo));
  const [to, setTo] = useState(toLocalInput(now));
  const [preview, setPreview] = useState<{ times: string[]; capped: boolean } | null>(null);
  const [err, setErr] = useState<ApiError | Error | null>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<BackfillResult | null>(null);
  const [down, setDown] = useState(false);
  const [mode, setMode] = useState<'all' | 'serial' | 'parallel'>('all');
  const [cycles, setCycles] = useState('2');
  const [plan, setPlan] = useState<{ n: number; tasks: number; downstream: number } | null>(null);
  const opts = (): BackfillOptions => ({
    include_downstream: down,
    mode,
    ...(mode === 'parallel' ? { max_cycles: Number(cycles) } : {}),
  });

  // With the downstream tasks, a dry run says how many instances that makes.
  useEffect(() => {
    const f = localToIso(from);
    const t = localToIso(to);
    setPlan(null);
    if (!down || !f || !t || f >= t) return;
    let live = true;
    const id = window.setTimeout(() => {
      api.backfill(task.id, f, t, { include_downstream: true, dry_run: true }).then(
        (r) => {
          const p = r.planned ?? [];
          if (live) setPlan({ n: p.length, tasks: new Set(p.map((x) => x.task_id)).size, downstream: p.filter((x) => x.downstream).length });
        },
        () => undefined,
      );
    }, 250);
    return () => {
      live = false;
      window.clearTimeout(id);
    };
  }, [from, to, down, task.id]);

  useEffect(() => {
    const f = localToIso(from);
    const t = localToIso(to);
    setPreview(null);
    if (!f || !t || !task.schedule || f >= t) return;
    const ctl = new AbortController();
    const id = window.setTimeout(() => {
      // "from" of /schedule/next is exclusive: start one second earlier.
      const start = new Date(new Date(f).getTime() - 1000).toISOString();
      // a task's business calendar moves or skips fire times, as halleyd's backfill does
      const cal = (task.spec.calendar as string | undefined) || undefined;
      const policy = (task.spec.calendar_policy as string | undefined) || undefined;
      api.scheduleNext(task.schedule, task.timezone || 'UTC', 100, ctl.signal, start, cal, policy).then(
        (r) => {
          const inside = r.times.filter((x) => x < t);
          setPreview({ times: inside, capped: inside.length === r.times.length && r.times.length === 100 });
        },
        () => undefined,
      );
    }, 200);
    return () => {
      ctl.abort();
      window.clearTimeout(id);
    };
  }, [from, to, task.schedule, task.timezone, task.spec.calendar, task.spec.calendar_policy]);

  const rangeErr =
    err instanceof ApiError && (err.field === 'from' || err.field === 'to')
      ? err
      : localToIso(from) && localToIso(to) && localToIso(from) >= localToIso(to)
        ? new Error('The end must be after the start')
        : null;
  const submit = async () => {
    setErr(null);
    setBusy(true);
    try {
      setResult(await api.backfill(task.id, localToIso(from), localToIso(to), opts()));
      onDone?.();
    } catch (e) {
      setErr(e as Error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal
      title={`Backfill ${task.name}`}
      onClose={onClose}
      footer={
        result ? (
          <button class="btn btn-primary" onClick={onClose}>
            Done
          </button>
        ) : (
          <>
            <button class="btn" onClick={onClose}>
              Cancel
            </button>
            <button class="btn btn-primary" onClick={submit} disabled={busy || !!rangeErr} data-testid="backfill-submit">
              {busy ? <Spinner /> : null} Create instances
            </button>
          </>
        )
      }
    >
      {result ? (
        <div class="backfill-result" data-testid="backfill-result">
          <div class="big-number">{result.created.length}</div>
          <div>
            instance{result.created.length === 1 ? '' : 's'} created for {result.fire_times} fire time
            {result.fire_times === 1 ? '' : 's'}
            {result.include_downstream ? ' and their downstream tasks' : ''}
            {result.existing.length > 0 && <>; {result.existing.length} already existed</>}.
            {result.mode === 'serial' ? ' One cycle runs at a time.' : result.mode === 'parallel' ? ` At most ${result.max_cycles} cycles run at a time.` : ''}
          </div>
          <Link to={`/instances?task_id=${task.id}`} class="btn btn-small">
            See the instances
          </Link>
        </div>
      ) : (
        <>
          <p class="muted">
            One instance per fire time of <code>{task.schedule}</code> ({task.timezone || 'UTC'}) from the start
            (inclusive) to the end (exclusive). Fire times that already have an instance are left alone.
          </p>
          <div class="row2">
            <Field label="From" field="from" error={rangeErr && (!(rangeErr instanceof ApiError) || rangeErr.field === 'from') ? rangeErr.message : null}>
              <input type="datetime-local" name="from" value={from} onInput={(e) => setFrom(val(e))} />
            </Field>
            <Field label="To" field="to" error={rangeErr instanceof ApiError && rangeErr.field === 'to' ? rangeErr.message : null}>
              <input type="datetime-local" name="to" value={to} onInput={(e) => setTo(val(e))} />
            </Field>
          </div>
          <div class="preview" data-testid="backfill-preview">
            {preview ? (
              preview.times.length === 0 ? (
                <span class="muted">No fire time in this range.</span>
              ) : (
                <>
                  <strong>
                    {preview.times.length}
                    {preview.capped ? '+' : ''}
                  </strong>{' '}
                  fire time{preview.times.length === 1 ? '' : 's'}: {fmtTime(preview.times[0])}
                  {preview.times.length > 1 && <> … {fmtTime(preview.times[preview.times.length - 1])}</>}
                </>
              )
            ) : (
              <span class="muted">Counting fire times…</span>
            )}
          </div>
          <label class="check-line" style={{ margin: '8px 0' }}>
            <input type="checkbox" name="include_downstream" checked={down} onChange={(e) => setDown(e.currentTarget.checked)} /> Include downstream
            tasks (their cycles that these fire times reach)
          </label>
          {down && (
            <div class="preview" data-testid="backfill-downstream" aria-live="polite">
              {plan ? (
                <>
                  <strong>{plan.n}</strong> instance{plan.n === 1 ? '' : 's'} of {plan.tasks} task{plan.tasks === 1 ? '' : 's'}, {plan.downstream}{' '}
                  downstream
                </>
              ) : (
                <span class="muted">Counting the downstream instances…</span>
              )}
            </div>
          )}
          <div class="row2">
            <Field label="Cycles" field="mode" hint="How keplerd releases the cycles">
              <select name="mode" value={mode} onChange={(e) => setMode(val(e) as 'all' | 'serial' | 'parallel')}>
                <option value="all">All at once</option>
                <option value="serial">One at a time (serial)</option>
                <option value="parallel">At most N at a time (parallel)</option>
              </select>
            </Field>
            {mode === 'parallel' && (
              <Field label="Cycles at a time" field="max_cycles" error={err instanceof ApiError && err.field === 'max_cycles' ? err.message : null}>
                <input type="number" name="max_cycles" min={1} max={100} value={cycles} onInput={(e) => setCycles(val(e))} />
              </Field>
            )}
          </div>
          {err && !(err instanceof ApiError && (err.field === 'from' || err.field === 'to' || err.field === 'max_cycles')) && (
            <div class="banner banner-error" role="alert">
              {errorText(err)}
            </div>
          )}
        </>
      )}
    </Modal>
  );
}
