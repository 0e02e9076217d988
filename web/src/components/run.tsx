// run.tsx - operators' runs in the console: "Run now" of a task's slot (from
// the task list, and for a waiting or suspended instance), and the rerun
// dialog of a finished instance: alone, with its downstream or with its
// upstream instances of the same cycle. The rerun dialog asks halleyd for a
// dry run first and lists what will rerun before the confirmation; the rerun
// itself is one transaction (a member that started meanwhile refuses the
// whole set, and the dialog says which). A transfer task's rerun resumes the
// splits its earlier attempts committed; the dialog offers "From scratch". Also the "rerun the failed ones"
// button of a workflow's run.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, type Instance, type RerunResult, type RerunScope } from '../api';
import { fmtTime, localToIso, toLocalInput } from '../format';
import { useRoute } from '../router';
import { canAct, useMe } from '../session';
import { isFinished } from '../states';
import { ErrorBanner, Field, Link, Modal, Spinner, StateBadge, errorText, toast, useAsync, val } from './ui';

/** The states "rerun the failed ones" takes. */
export const FAILED: string[] = ['failed', 'killed', 'timed_out'];

type TaskRef = { id: number; name: string; schedule?: string | null; timezone?: string | null; spec?: Record<string, unknown> };
type Param = { default?: string; description?: string };

/**
 * Run a task's instance of one schedule time now. With `at` the slot is
 * fixed (an instance's own); otherwise it starts at the task's next fire
 * time (now, for a task without a schedule) and can be changed.
 */
export function RunNowDialog({ task, at, onClose, onDone }: { task: TaskRef; at?: string; onClose: () => void; onDone?: () => void }) {
  const { navigate } = useRoute();
  const [when, setWhen] = useState(at ? toLocalInput(new Date(at)) : '');
  const [ignore, setIgnore] = useState(false);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<unknown>(null);
  // the task's declared parameters: a value typed here is the run's own
  const spec = useAsync(() => api.task(task.id), [task.id]);
  const declared = (spec.data?.spec.parameters as Record<string, Param> | undefined) ?? {};
  const [values, setValues] = useState<Record<string, string>>({});

  useEffect(() => {
    if (at) return;
    const now = new Date();
    now.setSeconds(0, 0);
    if (!task.schedule) {
      setWhen(toLocalInput(now));
      return;
    }
    const ctl = new AbortController();
    // the next fire time as its business calendar makes it, if it names one
    const cal = (task.spec?.calendar as string | undefined) || undefined;
    const policy = (task.spec?.calendar_policy as string | undefined) || undefined;
    api.scheduleNext(task.schedule, task.timezone || 'UTC', 1, ctl.signal, new Date().toISOString(), cal, policy).then(
      (r) => setWhen(toLocalInput(new Date(r.times[0] ?? now))),
      () => setWhen(toLocalInput(now)),
    );
    return () => ctl.abort();
  }, [task.id, at]);

  const fieldErr = err instanceof ApiError && err.field === 'schedule_time' ? err.message : null;
  const paramErr = (name: string) => (err instanceof ApiError && err.field === `params.${name}` ? err.message : null);
  const paramFieldErr = err instanceof ApiError && (err.field ?? '').startsWith('params.') && Object.hasOwn(declared, (err.field ?? '').slice(7));
  const submit = async (e?: Event) => {
    e?.preventDefault();
    setErr(null);
    setBusy(true);
    try {
      const given = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== ''));
      const r = await api.runNow(task.id, at ?? localToIso(when), ignore, reason || undefined, Object.keys(given).length ? given : undefined);
      toast(`${task.name}: instance #${r.instance.id} runs now${ignore ? ', ignoring its upstreams' : ''}`);
      onDone?.();
      onClose();
      if (!at) navigate(`/instances/${r.instance.id}`);
    } catch (x) {
      setErr(x);
      setBusy(false);
    }
  };
  return (
    <Modal
      title={`Run ${task.name} now`}
      onClose={onClose}
      footer={
        <>
          <button class="btn" onClick={onClose} disabled={busy}>
            Cancel
          </button>
          <button class="btn btn-primary" onClick={() => submit()} disabled={busy || (!at && !when)} data-testid="run-now-submit">
            {busy ? <Spinner /> : null} Run now
          </button>
        </>
      }
    >
      <form onSubmit={submit} data-testid="run-now-form">
        <p class="muted">
          The instance of this schedule time runs at once, without waiting for its time: it is created if it does not exist, or
          released if it waits. Its timeline and the audit log record who asked.
        </p>
        {at ? (
          <p>
            Schedule time: <strong>{fmtTime(at)}</strong>
          </p>
        ) : (
          <Field
            label="Schedule time"
            field="schedule_time"
            error={fieldErr}
            hint={task.schedule ? `A fire time of ${task.schedule} (${task.timezone || 'UTC'}), in your local time` : 'Any time, in your local time'}
          >
            <input type="datetime-local" name="schedule_time" value={when} onInput={(e) => setWhen(val(e))} />
          </Field>
        )}
        <label class="check-line" style={{ margin: '4px 0 12px' }}>
          <input type="checkbox" name="ignore_upstreams" checked={ignore} onChange={(e) => setIgnore(e.currentTarget.checked)} /> Ignore its
          upstreams (run even if they have not succeeded)
        </label>
        {Object.keys(declared).length ? (
          <fieldset class="subgroup" data-testid="run-now-params">
            <legend>Parameters for this run (empty keeps the current value)</legend>
            {Object.entries(declared).map(([name, p]) => (
              <Field key={name} label={name} field={`params.${name}`} error={paramErr(name)} hint={p.description || undefined}>
                <input
                  type="text"
                  name={`params.${name}`}
                  value={values[name] ?? ''}
                  placeholder={p.default ?? ''}
                  onInput={(e) => setValues({ ...values, [name]: val(e) })}
                />
              </Field>
            ))}
          </fieldset>
        ) : null}
        <Field label="Reason (optional)" field="reason">
          <input type="text" name="reason" value={reason} maxLength={4096} onInput={(e) => setReason(val(e))} />
        </Field>
        {err && !fieldErr && !paramFieldErr ? <ErrorBanner error={err} /> : null}
      </form>
    </Modal>
  );
}

const SCOPES: { id: RerunScope; label: string }[] = [
  { id: 'instance', label: 'This instance only' },
  { id: 'downstream', label: 'With its downstream instances of the same cycle' },
  { id: 'upstream', label: 'With its upstream instances of the same cycle' },
];

/** The members of a rerun set: what reruns and what is left as it is. */
function RerunTable({ set }: { set: RerunResult }) {
  return (
    <div class="table-wrap" style={{ marginBottom: '12px' }}>
      <table class="table compact" data-testid="rerun-members">
        <thead>
          <tr>
            <th>Task</th>
            <th>Schedule time</th>
            <th>State now</th>
            <th>Will</th>
          </tr>
        </thead>
        <tbody>
          {set.members.map((m) => (
            <tr key={m.instance.id} data-instance={m.instance.id} data-rerun={m.rerun ? 'yes' : 'no'}>
              <td>
                <Link to={`/instances/${m.instance.id}`}>{m.instance.task_name}</Link>
              </td>
              <td class="nowrap">{fmtTime(m.instance.schedule_time)}</td>
              <td>
                <StateBadge state={m.instance.state} />
              </td>
              <td>{m.rerun ? `rerun (${m.why})` : `stay as it is (${m.why})`}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * Rerun a finished instance, alone or with its downstream or upstream
 * instances of the same cycle: a dry run lists the set for the chosen scope,
 * then "Rerun N instances" sends them back to waiting in one transaction.
 */
export function RerunDialog({
  inst,
  onClose,
  onDone,
}: {
  inst: Pick<Instance, 'id' | 'task_name' | 'schedule_time'> & { task_id?: number };
  onClose: () => void;
  onDone?: () => void;
}) {
  const [scope, setScope] = useState<RerunScope>('downstream');
  const transfer = useIsTransfer(inst.task_id);
  const [scratch, setScratch] = useState(false);
  const [plan, setPlan] = useState<RerunResult | null>(null);
  const [planErr, setPlanErr] = useState<unknown>(null);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<unknown>(null);

  useEffect(() => {
    let live = true;
    setPlan(null);
    setPlanErr(null);
    api.rerunSet(inst.id, scope, true).then(
      (r) => live && setPlan(r),
      (e) => live && setPlanErr(e),
    );
    return () => {
      live = false;
    };
  }, [inst.id, scope]);

  const go = async () => {
    setErr(null);
    setBusy(true);
    try {
      const r = await api.rerunSet(inst.id, scope, false, reason || undefined, !!transfer && scratch);
      toast(`${r.rerun} instance${r.rerun === 1 ? '' : 's'} back to waiting`);
      onDone?.();
      onClose();
    } catch (e) {
      setErr(e);
      setBusy(false);
    }
  };
  const n = plan?.rerun ?? 0;
  return (
    <Modal
      wide
      title={`Rerun ${inst.task_name} of ${fmtTime(inst.schedule_time)}`}
      onClose={onClose}
      footer={
        <>
          <button class="btn" onClick={onClose} disabled={busy}>
            Cancel
          </button>
          <button class="btn btn-primary" onClick={go} disabled={busy || !plan || n === 0} data-testid="rerun-confirm">
            {busy ? <Spinner /> : null} Rerun {n} instance{n === 1 ? '' : 's'}
          </button>
        </>
      }
    >
      <Field label="What to rerun" field="scope">
        <select name="scope" value={scope} onChange={(e) => setScope(val(e) as RerunScope)}>
          {SCOPES.map((s) => (
            <option key={s.id} value={s.id}>
              {s.label}
            </option>
          ))}
        </select>
      </Field>
      <div
        data-testid="rerun-plan"
        data-ready={plan ? 'true' : 'false'}
        data-scope={scope}
        data-transfer={transfer === null ? 'unknown' : String(transfer)}
        aria-live="polite"
      >
        {planErr ? (
          <ErrorBanner error={planErr} />
        ) : !plan ? (
          <div class="muted">
            <Spinner /> Finding the instances…
          </div>
        ) : (
          <>
            <p>
              {n === 0
                ? 'Nothing to rerun: every instance of the set waits already.'
                : `${n} instance${n === 1 ? '' : 's'} will go back to waiting and run again as a new attempt, in dependency order.`}
            </p>
            <RerunTable set={plan} />
            {plan.missing.length > 0 && (
              <p class="muted" data-testid="rerun-missing">
                Not created yet (left alone):{' '}
                {plan.missing.map((m, i) => (
                  <span key={i}>
                    {i ? ', ' : ''}
                    {m.task_name} {fmtTime(m.schedule_time)}
                  </span>
                ))}
              </p>
            )}
          </>
        )}
      </div>
      {transfer && (
        <div class="field" data-field="from_scratch" data-testid="rerun-from-scratch">
          <label class="check-line">
            <input type="checkbox" name="from_scratch" checked={scratch} onChange={(e) => setScratch(e.currentTarget.checked)} /> From scratch
          </label>
          <div class="field-hint">
            {scratch
              ? 'The transfer reads everything again; the splits its earlier attempt committed are forgotten.'
              : 'The transfer resumes: it reads only the splits its earlier attempt did not commit.'}
          </div>
        </div>
      )}
      <Field label="Reason (optional)" field="reason">
        <input type="text" name="reason" value={reason} maxLength={4096} onInput={(e) => setReason(val(e))} />
      </Field>
      {err ? (
        <div class="banner banner-error" role="alert" data-testid="rerun-error">
          {errorText(err)}
        </div>
      ) : null}
    </Modal>
  );
}

/** Whether the task is a transfer (its rerun can resume); null until known. */
function useIsTransfer(taskId?: number): boolean | null {
  const [yes, setYes] = useState<boolean | null>(taskId ? null : false);
  useEffect(() => {
    if (!taskId) return;
    let live = true;
    api.task(taskId).then(
      (t) => live && setYes(t.spec?.type === 'transfer'),
      () => live && setYes(false),
    );
    return () => {
      live = false;
    };
  }, [taskId]);
  return yes;
}

/** The run actions of the instance page's action bar: run now (waiting or
 * suspended) and rerun with dependents (finished). */
export function RunActions({ inst, onDone }: { inst: Instance; onDone: () => void }) {
  const [open, setOpen] = useState<'run' | 'rerun' | null>(null);
  const canRun = inst.state === 'waiting' || inst.state === 'suspended';
  return (
    <>
      {canRun && (
        <button class="btn" data-action="run-now" onClick={() => setOpen('run')}>
          Run now
        </button>
      )}
      {isFinished(inst.state) && (
        <button class="btn" data-action="rerun-set" onClick={() => setOpen('rerun')}>
          Rerun with…
        </button>
      )}
      {open === 'run' && <RunNowDialog task={{ id: inst.task_id, name: inst.task_name }} at={inst.schedule_time} onClose={() => setOpen(null)} onDone={onDone} />}
      {open === 'rerun' && <RerunDialog inst={inst} onClose={() => setOpen(null)} onDone={onDone} />}
    </>
  );
}

/** "Rerun the failed ones" of one run (cycle) of a workflow, after a dry run
 * (for those who may act on instances; nothing for viewers). */
export function RerunFailedButton({ workflow, cycle, onDone }: { workflow: string; cycle: string; onDone?: () => void }) {
  const me = useMe();
  const [plan, setPlan] = useState<RerunResult | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  if (!canAct(me)) return null;
  const ask = async () => {
    setErr(null);
    try {
      setPlan(await api.rerunWorkflowFailed(workflow, cycle, true));
    } catch (e) {
      setErr(e);
    }
  };
  const go = async () => {
    setBusy(true);
    setErr(null);
    try {
      const r = await api.rerunWorkflowFailed(workflow, cycle, false);
      toast(`${r.rerun} failed instance${r.rerun === 1 ? '' : 's'} back to waiting`);
      setPlan(null);
      onDone?.();
    } catch (e) {
      setErr(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button class="btn btn-small" data-action="rerun-failed" onClick={ask}>
        Rerun the failed ones
      </button>
      {err && !plan ? <ErrorBanner error={err} /> : null}
      {plan && (
        <Modal
          wide
          title={`Rerun the failed instances of ${workflow}, ${fmtTime(cycle)}`}
          onClose={() => setPlan(null)}
          footer={
            <>
              <button class="btn" onClick={() => setPlan(null)} disabled={busy}>
                Cancel
              </button>
              <button class="btn btn-primary" onClick={go} disabled={busy || plan.rerun === 0} data-testid="rerun-failed-confirm">
                {busy ? <Spinner /> : null} Rerun {plan.rerun}
              </button>
            </>
          }
        >
          {plan.rerun === 0 ? <p>No instance of this run failed.</p> : <RerunTable set={plan} />}
          {err ? <ErrorBanner error={err} /> : null}
        </Modal>
      )}
    </>
  );
}
