// calendars.tsx - business calendars: the list (with a form for a new one)
// and one calendar's page: a month view of its business days where a day is
// excluded or included with one click (and its mark removed with another),
// its business weekdays, the import of an .ics file (holidays), and delete.
// A task names a calendar in the designer ("calendar", "calendar_policy").
import { useState } from 'preact/hooks';
import { api, ApiError, type CalendarDays } from '../api';
import { Confirm, Empty, ErrorBanner, Field, Link, Loading, PageHead, Spinner, toast, useAsync, val } from '../components/ui';
import { useRoute } from '../router';
import { canAct, canEditTeam, useMe } from '../session';

const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

const pad = (n: number) => String(n).padStart(2, '0');
const ymd = (y: number, m: number, d: number) => `${y}-${pad(m)}-${pad(d)}`;
const daysIn = (y: number, m: number) => new Date(Date.UTC(y, m, 0)).getUTCDate();

function fieldError(err: unknown, field: string): string | null {
  return err instanceof ApiError && err.field === field ? err.message : null;
}

function WeekdayBoxes(props: { value: number[]; onChange: (v: number[]) => void; disabled?: boolean }) {
  return (
    <fieldset class="cal-weekdays" disabled={props.disabled}>
      <legend class="field-label">Business weekdays</legend>
      {WEEKDAYS.map((w, i) => (
        <label key={w} class="cal-weekday">
          <input
            type="checkbox"
            checked={props.value.includes(i + 1)}
            onChange={(e) => {
              const on = (e.currentTarget as HTMLInputElement).checked;
              props.onChange(on ? [...props.value, i + 1].sort() : props.value.filter((x) => x !== i + 1));
            }}
          />{' '}
          {w}
        </label>
      ))}
    </fieldset>
  );
}

export function CalendarsPage() {
  const me = useMe();
  const { navigate } = useRoute();
  const list = useAsync(() => api.calendars(), []);
  const [name, setName] = useState('');
  const [team, setTeam] = useState(me.teams[0] ?? '');
  const [zone, setZone] = useState('UTC');
  const [weekdays, setWeekdays] = useState([1, 2, 3, 4, 5]);
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const create = async (e: Event) => {
    e.preventDefault();
    setErr(null);
    setBusy(true);
    try {
      const c = await api.createCalendar({ name: name.trim(), team: team.trim(), timezone: zone.trim() || 'UTC', weekdays });
      toast(`Calendar ${c.name} created`);
      navigate(`/calendars/${encodeURIComponent(c.name)}`);
    } catch (x) {
      setErr(x);
    } finally {
      setBusy(false);
    }
  };
  const items = list.data?.items ?? [];
  const known = ['name', 'team', 'timezone', 'weekdays'];
  return (
    <div>
      <PageHead title="Calendars" sub="Business days for schedules: a task skips its fire times on other days, or moves them to the next or previous business day." />
      {canAct(me) && (
        <form class="card pad" onSubmit={create} noValidate data-testid="calendar-form">
          <h2>New calendar</h2>
          <div class="cal-row">
            <Field label="Name" field="name" error={fieldError(err, 'name')}>
              <input name="calendar-name" value={name} onInput={(e) => setName(val(e))} placeholder="de-holidays" />
            </Field>
            <Field label="Team" field="team" error={fieldError(err, 'team')}>
              <input name="calendar-team" value={team} onInput={(e) => setTeam(val(e))} list="calendar-teams" />
            </Field>
            <Field label="Time zone" field="timezone" error={fieldError(err, 'timezone')} hint="The zone its dates are read in">
              <input name="calendar-timezone" value={zone} onInput={(e) => setZone(val(e))} placeholder="Europe/Berlin" />
            </Field>
          </div>
          <datalist id="calendar-teams">
            {me.teams.map((t) => (
              <option key={t} value={t} />
            ))}
          </datalist>
          <WeekdayBoxes value={weekdays} onChange={setWeekdays} />
          {fieldError(err, 'weekdays') && <div class="field-error" role="alert">{fieldError(err, 'weekdays')}</div>}
          <div class="cal-actions">
            <button class="btn btn-primary" type="submit" disabled={busy}>
              {busy ? <Spinner /> : null} Create calendar
            </button>
          </div>
          {err && !(err instanceof ApiError && err.field && known.includes(err.field)) ? <ErrorBanner error={err} /> : null}
        </form>
      )}
      <ErrorBanner error={list.error} onRetry={list.reload} />
      {list.loading && !list.data ? (
        <Loading what="calendars" />
      ) : items.length === 0 ? (
        !list.error && (
          <Empty title="No calendars yet" icon="📅">
            Create one above, then import its holidays from an .ics file.
          </Empty>
        )
      ) : (
        <div class="card table-wrap">
          <table class="table" data-testid="calendar-table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Team</th>
                <th>Time zone</th>
                <th>Business weekdays</th>
                <th class="right">Dated days</th>
              </tr>
            </thead>
            <tbody>
              {items.map((c) => (
                <tr key={c.name} data-calendar={c.name}>
                  <td class="strong">
                    <Link to={`/calendars/${encodeURIComponent(c.name)}`}>{c.name}</Link>
                  </td>
                  <td>{c.team}</td>
                  <td>{c.timezone}</td>
                  <td>{c.weekdays.map((d) => WEEKDAYS[d - 1]).join(' ') || <span class="muted">none</span>}</td>
                  <td class="right">{c.days_count}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

/** The month grid: weeks from Monday; each date a button that marks it. */
function MonthView(props: { view: CalendarDays; editable: boolean; busy: boolean; onToggle: (day: string, business: boolean, kind: string | null) => void }) {
  const days = props.view.days;
  if (!days.length) return null;
  const lead = days[0].weekday - 1;
  const cells: (CalendarDays['days'][number] | null)[] = [...Array(lead).fill(null), ...days];
  while (cells.length % 7) cells.push(null);
  const weeks: (typeof cells)[] = [];
  for (let i = 0; i < cells.length; i += 7) weeks.push(cells.slice(i, i + 7));
  const title = (d: CalendarDays['days'][number]) => {
    const what = d.business ? 'business day' : 'not a business day';
    const mark = d.kind ? ` (${d.kind}${d.note ? `: ${d.note}` : ''})` : '';
    const act = !props.editable ? '' : d.kind ? ', press to clear the mark' : d.business ? ', press to exclude' : ', press to include';
    return `${d.day}: ${what}${mark}${act}`;
  };
  return (
    <table class="cal-month" data-testid="calendar-month">
      <thead>
        <tr>
          {WEEKDAYS.map((w) => (
            <th key={w} scope="col">
              {w}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {weeks.map((w, i) => (
          <tr key={i}>
            {w.map((d, j) =>
              d ? (
                <td key={j}>
                  <button
                    type="button"
                    class={`cal-day ${d.business ? 'cal-business' : 'cal-off'} ${d.kind ? `cal-${d.kind}` : ''}`}
                    data-day={d.day}
                    data-business={d.business ? '1' : '0'}
                    title={title(d)}
                    disabled={!props.editable || props.busy}
                    onClick={() => props.onToggle(d.day, d.business, d.kind)}
                  >
                    <span class="cal-num">{Number(d.day.slice(8))}</span>
                    <span class="cal-sr"> {title(d)}</span>
                    {d.kind && (
                      <span class="cal-mark" aria-hidden="true">
                        {d.kind === 'excluded' ? '✕' : '✓'}
                      </span>
                    )}
                  </button>
                </td>
              ) : (
                <td key={j} />
              ),
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function CalendarPage({ name }: { name: string }) {
  const me = useMe();
  const { navigate } = useRoute();
  const now = new Date();
  const [ym, setYm] = useState({ y: now.getUTCFullYear(), m: now.getUTCMonth() + 1 });
  const cal = useAsync(() => api.calendar(name), [name]);
  const from = ymd(ym.y, ym.m, 1);
  const to = ymd(ym.y, ym.m, daysIn(ym.y, ym.m));
  const view = useAsync(() => api.calendarDays(name, from, to), [name, from]);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<unknown>(null);
  const [kind, setKind] = useState<'excluded' | 'included'>('excluded');
  const [file, setFile] = useState<File | null>(null);
  const [imported, setImported] = useState<string | null>(null);
  const [del, setDel] = useState(false);
  const c = cal.data;
  const editable = !!c && canEditTeam(me, c.team);

  const reload = () => {
    cal.reload();
    view.reload();
  };
  const toggle = async (day: string, business: boolean, mark: string | null) => {
    setErr(null);
    setBusy(true);
    try {
      if (mark) await api.updateCalendar(name, { remove: [day] });
      else await api.updateCalendar(name, { add: [{ day, kind: business ? 'excluded' : 'included' }] });
      reload();
    } catch (x) {
      setErr(x);
    } finally {
      setBusy(false);
    }
  };
  const saveWeekdays = async (weekdays: number[]) => {
    setErr(null);
    try {
      await api.updateCalendar(name, { weekdays });
      reload();
    } catch (x) {
      setErr(x);
    }
  };
  const doImport = async (e: Event) => {
    e.preventDefault();
    setErr(null);
    setImported(null);
    if (!file) {
      setErr(new ApiError(400, 'EINVAL', 'choose an .ics file', 'body'));
      return;
    }
    setBusy(true);
    try {
      const r = await api.importCalendar(name, await file.text(), kind);
      setImported(`${r.days.length} days in the file, ${r.added} new or changed`);
      reload();
    } catch (x) {
      setErr(x);
    } finally {
      setBusy(false);
    }
  };
  const move = (d: number) => {
    const m0 = ym.m - 1 + d;
    setYm({ y: ym.y + Math.floor(m0 / 12), m: (((m0 % 12) + 12) % 12) + 1 });
  };

  if (cal.loading && !c) return <Loading what="calendar" />;
  if (!c)
    return (
      <div>
        <PageHead title={name} />
        <ErrorBanner error={cal.error} onRetry={cal.reload} />
      </div>
    );
  return (
    <div>
      <PageHead
        title={`Calendar ${c.name}`}
        sub={
          <>
            Team {c.team} · {c.timezone} · {c.days_count} dated days{c.description ? ` · ${c.description}` : ''}
          </>
        }
        actions={
          <>
            <Link to="/calendars" class="btn btn-ghost">
              All calendars
            </Link>
            {editable && (
              <button class="btn btn-ghost danger-text" onClick={() => setDel(true)}>
                Delete
              </button>
            )}
          </>
        }
      />
      {err && !fieldError(err, 'body') ? <ErrorBanner error={err} /> : null}
      <div class="card pad">
        <div class="cal-head">
          <button class="btn btn-small" onClick={() => move(-1)} aria-label="Previous month">
            ‹
          </button>
          <h2 class="cal-title" aria-live="polite">
            {MONTHS[ym.m - 1]} {ym.y}
          </h2>
          <button class="btn btn-small" onClick={() => move(1)} aria-label="Next month">
            ›
          </button>
        </div>
        <ErrorBanner error={view.error} onRetry={view.reload} />
        {view.data ? <MonthView view={view.data} editable={editable} busy={busy} onToggle={toggle} /> : <Loading what="days" />}
        <p class="muted small cal-legend">
          <span class="cal-swatch cal-business" aria-hidden="true" /> business day <span class="cal-swatch cal-off" aria-hidden="true" /> not a business day · ✕
          excluded · ✓ included{editable ? ' · press a day to exclude or include it, again to clear it' : ''}
        </p>
        <WeekdayBoxes value={c.weekdays} onChange={saveWeekdays} disabled={!editable} />
      </div>
      {editable && (
        <form class="card pad" onSubmit={doImport} noValidate data-testid="calendar-import">
          <h2>Import an .ics file</h2>
          <div class="cal-row">
            <Field label="iCalendar file" field="body" error={fieldError(err, 'body')} hint="Every day its events cover, this year and the next five">
              <input type="file" name="calendar-ics" accept=".ics,text/calendar" onChange={(e) => setFile((e.currentTarget as HTMLInputElement).files?.[0] ?? null)} />
            </Field>
            <Field label="The days become" field="kind">
              <select name="calendar-kind" value={kind} onChange={(e) => setKind(val(e) as 'excluded' | 'included')}>
                <option value="excluded">excluded (holidays)</option>
                <option value="included">included (extra business days)</option>
              </select>
            </Field>
            <button class="btn btn-primary" type="submit" disabled={busy}>
              {busy ? <Spinner /> : null} Import
            </button>
          </div>
          {imported && (
            <div class="muted" role="status" data-testid="calendar-imported">
              Imported: {imported}
            </div>
          )}
        </form>
      )}
      {del && (
        <Confirm
          title={`Delete calendar "${c.name}"?`}
          body="Tasks that name it must be changed first; the delete is refused while one does."
          confirmLabel="Delete"
          danger
          onClose={() => setDel(false)}
          onConfirm={async () => {
            await api.deleteCalendar(c.name);
            toast(`Calendar ${c.name} deleted`);
            navigate('/calendars');
          }}
        />
      )}
    </div>
  );
}
