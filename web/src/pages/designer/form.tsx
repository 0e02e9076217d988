// form.tsx - the designer form of one task: the sections of the spec, the
// type's config section, the spec panel, the task's versions (versions.tsx),
// and the page's actions (save with a comment, backfill, deactivate,
// reactivate).
//
// Errors: the schema is checked in the browser as the user types (shown once
// a field was touched or a save was tried); the server's answer (error.field)
// is placed next to the same field. Saving an existing task sends If-Match
// with the version that was loaded, so a concurrent edit is a clear 409.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError, type Pool, type Task, type TaskSpec } from '../../api';
import { BackfillDialog } from '../../components/backfill';
import { Confirm, ErrorBanner, Field, Link, PageHead, Spinner, toast, val } from '../../components/ui';
import { fmtRelative } from '../../format';
import { useRoute } from '../../router';
import { configSchemaFor, fieldToPath, validate, type JSONSchema } from '../../schema';
import { canEditTeam, useMe } from '../../session';
import { JsonObject } from './inputs';
import { Prop, Section } from './prop';
import { SpecPanel } from './spec-panel';
import { Versions } from './versions';
import { QualityChecks } from './quality';
import { TransferConfig } from './transfer';
import { setIn, type Ctx, type Obj } from './state';

/** Sections of the form; properties the schema gains later land in "More". */
const SECTIONS: { title: string; keys: string[]; desc?: string }[] = [
  { title: 'Basics', keys: ['name', 'team', 'type', 'description'] },
  { title: 'Schedule', keys: ['schedule', 'timezone', 'calendar', 'calendar_policy', 'catch_up'], desc: 'When it fires. Leave the schedule empty for a task you run by hand or by backfill. A business calendar skips or moves fire times on days that are not business days.' },
  { title: 'Dependencies', keys: ['upstreams'], desc: 'Tasks whose instance of the same cycle must finish first.' },
  { title: 'Resources', keys: ['pools', 'slots', 'max_parallel', 'priority'], desc: 'What one instance takes while it runs.' },
  { title: 'Retries and timeout', keys: ['retries', 'timeout'] },
  {
    title: 'Deadlines',
    keys: ['deadlines'],
    desc: 'When a run must have started or finished, counted from its schedule time. Alert rules with the deadline events tell you the moment one passes, while the run is still going.',
  },
  { title: 'Labels', keys: ['labels'] },
  { title: 'Parameters', keys: ['parameters'], desc: 'Named values the config can use as ${name}, with defaults a run can override.' },
];

export function DesignerForm({ root, task, pools }: { root: JSONSchema; task: Task | null; pools: Pool[] }) {
  const { navigate, query } = useRoute();
  const me = useMe();
  const editable = task ? canEditTeam(me, task.team) : me.role !== 'viewer';
  const myTeams = me.role === 'admin' ? [] : me.teams;
  const [spec, setSpec] = useState<Obj>(() =>
    task
      ? (JSON.parse(JSON.stringify(task.spec)) as Obj)
      : { type: 'shell', team: myTeams.length === 1 ? myTeams[0] : undefined, timezone: 'UTC', config: {} },
  );
  const [touched, setTouched] = useState<Set<string>>(new Set());
  const [tried, setTried] = useState(false);
  const [serverErr, setServerErr] = useState<ApiError | Error | null>(null);
  const [saving, setSaving] = useState(false);
  const [backfill, setBackfill] = useState(false);
  const [confirmDeactivate, setConfirmDeactivate] = useState(false);
  const [comment, setComment] = useState('');
  const version = useRef(task?.version);
  // the version shown in the header: the loaded one, then each saved one
  const [cur, setCur] = useState(task);

  const errors = useMemo(() => validate(root, spec), [root, spec]);
  const serverPath = serverErr instanceof ApiError ? fieldToPath(serverErr.field) : '';
  const shown = (p: string) => tried || touched.has(p) || [...touched].some((t) => p.startsWith(`${t}.`));
  const ctx: Ctx = {
    root,
    spec,
    set: (path, v) => {
      setSpec((s) => setIn(s, path, v));
      setTouched((t) => new Set(t).add(path.join('.')));
      if (serverErr && serverPath && path.join('.') === serverPath) setServerErr(null);
    },
    err: (p) => (serverPath === p && serverErr ? serverErr.message : shown(p) ? (errors[p] ?? null) : null),
    touch: (p) => setTouched((t) => new Set(t).add(p)),
    readOnly: !editable,
    teams: me.role === 'admin' ? [] : me.teams,
    pools,
    selfName: String(spec.name ?? ''),
  };
  const type = String(spec.type ?? '');
  const configSchema = configSchemaFor(root, type);
  // Switching type resets config to what the new type needs.
  const lastType = useRef(type);
  useEffect(() => {
    if (lastType.current !== type) {
      lastType.current = type;
      setSpec((s) => ({ ...s, config: {} }));
    }
  }, [type]);

  const props = root.properties ?? {};
  const placed = new Set(SECTIONS.flatMap((s) => s.keys).concat(['config']));
  const extra = Object.keys(props).filter((k) => !placed.has(k));
  const nErr = Object.keys(errors).length;

  const focusField = (p: string) => {
    setTouched((t) => new Set(t).add(p));
    const el = document.querySelector(`[data-field="${CSS.escape(p)}"]`) as HTMLElement | null;
    el?.scrollIntoView({ block: 'center' });
    (el?.querySelector('input, select, textarea') as HTMLElement | null)?.focus();
  };

  const save = async (e: Event) => {
    e.preventDefault();
    setTried(true);
    setServerErr(null);
    if (nErr) {
      const first = document.querySelector('.field.has-error input, .field.has-error select, .field.has-error textarea') as HTMLElement | null;
      first?.focus();
      return;
    }
    setSaving(true);
    try {
      const body = spec as TaskSpec;
      if (task) {
        const t = await api.updateTask(task.id, body, version.current, comment);
        version.current = t.version;
        setCur(t);
        if (t.changed) setComment('');
        toast(t.changed ? `Saved ${t.name}, version ${t.version}` : `No change: ${t.name} stays at version ${t.version}`);
        if (t.warnings?.length) toast(t.warnings.map((w) => w.message).join(' · '), 'error');
        navigate(`/tasks/${t.id}`, true);
      } else {
        const t = await api.createTask(body);
        toast(`Created ${t.name}`);
        if (t.warnings?.length) toast(t.warnings.map((w) => w.message).join(' · '), 'error');
        navigate(`/tasks/${t.id}`);
      }
    } catch (x) {
      setServerErr(x as Error);
    } finally {
      setSaving(false);
    }
  };

  const render = (k: string) =>
    props[k] ? <Prop key={k} ctx={ctx} path={[k]} schema={props[k]} required={(root.required ?? []).includes(k)} /> : null;
  const bannerErr =
    serverErr && !(serverErr instanceof ApiError && serverPath && document.querySelector(`[data-field="${CSS.escape(serverPath)}"]`))
      ? serverErr
      : null;

  return (
    <form onSubmit={save} noValidate class="designer" data-testid="designer">
      <PageHead
        title={task ? task.name : 'New task'}
        sub={
          task ? (
            <>
              <span class="tag">{task.team}</span> <span data-testid="task-version">version {(cur ?? task).version}</span> · created by{' '}
              {(cur ?? task).created_by} {fmtRelative((cur ?? task).created_at)}
              {!(cur ?? task).active && (
                <span class="tag tag-muted" data-testid="deactivated">
                  deactivated
                </span>
              )}
            </>
          ) : (
            'Describe what runs, when, and what it needs.'
          )
        }
        actions={
          <>
            {task && (
              <>
                <Link to={`/workflow/${task.id}`} class="btn btn-ghost">
                  Workflow graph
                </Link>
                <Link to={`/instances?task_id=${task.id}`} class="btn btn-ghost">
                  Instances
                </Link>
                {editable && task.schedule && (
                  <button type="button" class="btn btn-ghost" onClick={() => setBackfill(true)}>
                    Backfill…
                  </button>
                )}
                {editable && !(cur ?? task).active && (
                  <button
                    type="button"
                    class="btn btn-ghost"
                    data-testid="reactivate"
                    onClick={async () => {
                      try {
                        const t = await api.reactivateTask(task.id);
                        setCur(t);
                        toast(`${t.name} is active again`);
                      } catch (x) {
                        setServerErr(x as Error);
                      }
                    }}
                  >
                    Reactivate
                  </button>
                )}
                {editable && (cur ?? task).active && (
                  <button type="button" class="btn btn-ghost danger-text" onClick={() => setConfirmDeactivate(true)}>
                    Deactivate
                  </button>
                )}
              </>
            )}
            {editable && (
              <button class="btn btn-primary" type="submit" disabled={saving} data-testid="save-task">
                {saving ? <Spinner /> : null} {task ? 'Save new version' : 'Create task'}
              </button>
            )}
          </>
        }
      />
      {!editable && (
        <div class="banner banner-warn" data-testid="readonly-banner">
          {me.role === 'viewer'
            ? 'You are a viewer: tasks are read-only for you.'
            : `Read-only: this task belongs to team ${task?.team}, and you are not a member (your teams: ${me.teams.join(', ') || 'none'}).`}
        </div>
      )}
      {tried && nErr > 0 && (
        <div class="banner banner-error" role="alert">
          {nErr === 1 ? 'One field needs' : `${nErr} fields need`} attention before saving.
        </div>
      )}
      <ErrorBanner error={bannerErr} />
      <div class="designer-cols">
        <div>
          {SECTIONS.filter((sec) => sec.keys.some((k) => props[k])).map((sec) => (
            <Section key={sec.title} title={sec.title} desc={sec.desc}>
              {sec.keys.map(render)}
            </Section>
          ))}
          <Section title={`${type || 'Type'} configuration`} desc={configSchema.description} id="config">
            {type === 'transfer' ? (
              <TransferConfig ctx={ctx} />
            ) : configSchema.properties ? (
              Object.entries(configSchema.properties).map(([k, ps]) => (
                <Prop key={`${type}.${k}`} ctx={ctx} path={['config', k]} schema={ps} required={(configSchema.required ?? []).includes(k)} />
              ))
            ) : (
              <JsonObject key={type} ctx={ctx} path={['config']} label="Config (JSON)" hint="Checked in full by the engine that runs this type." />
            )}
            {type === 'transfer' && <QualityChecks ctx={ctx} path={['config', 'quality']} transfer />}
            {ctx.err('config') && <div class="field-error span2">{ctx.err('config')}</div>}
          </Section>
          {extra.length > 0 && <Section title="More">{extra.map(render)}</Section>}
        </div>
        <SpecPanel spec={spec} errors={errors} onFocus={focusField} />
      </div>
      {task && editable && (
        <div class="card pad save-comment">
          <Field label="Comment for the new version (optional)" hint="Kept with the version you save; shown in the version list.">
            <input value={comment} maxLength={1000} onInput={(e) => setComment(val(e))} data-testid="save-comment" />
          </Field>
        </div>
      )}
      {task && (
        <Versions
          task={cur ?? task}
          editable={editable}
          pick={Number(query.get('version')) || undefined}
          onRolledBack={(t) => {
            version.current = t.version;
            setCur(t);
            setSpec(JSON.parse(JSON.stringify(t.spec)) as Obj);
          }}
        />
      )}
      {backfill && task && <BackfillDialog task={task} onClose={() => setBackfill(false)} />}
      {confirmDeactivate && task && (
        <Confirm
          title={`Deactivate ${task.name}?`}
          body="It stops being scheduled. Its history stays; you can still read it."
          confirmLabel="Deactivate"
          danger
          onClose={() => setConfirmDeactivate(false)}
          onConfirm={async () => {
            await api.deactivateTask(task.id, 'deactivated in the designer');
            toast(`${task.name} deactivated`);
            navigate('/tasks');
          }}
        />
      )}
    </form>
  );
}
