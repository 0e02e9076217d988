// cron.tsx - the schedule field of the designer: the cron expression with a
// few presets, and its next fire times (asked from galaxyd's
// /schedule/next as the user types, so the preview uses the same cron and
// time-zone code as the scheduler). With a business calendar, the times are
// the adjusted ones, and the cron's own times are listed marked kept,
// skipped or moved.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from '../../api';
import { Field, Spinner, val } from '../../components/ui';
import { fmtRelative, fmtTime } from '../../format';
import type { Ctx } from './state';

type Fire = { time: string; outcome: 'kept' | 'skipped' | 'moved'; to: string | null };

export function Cron({ ctx }: { ctx: Ctx }) {
  const cron = (ctx.spec.schedule as string | undefined) ?? '';
  const tz = (ctx.spec.timezone as string | undefined) || 'UTC';
  const calendar = (ctx.spec.calendar as string | undefined)?.trim() || undefined;
  const policy = (ctx.spec.calendar_policy as string | undefined) || 'skip';
  const [times, setTimes] = useState<string[] | null>(null);
  const [fires, setFires] = useState<Fire[] | null>(null);
  const [cronErr, setCronErr] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    setCronErr(null);
    if (!cron.trim()) {
      setTimes(null);
      return;
    }
    const ctl = new AbortController();
    setBusy(true);
    const id = window.setTimeout(() => {
      api.scheduleNext(cron.trim(), tz, 5, ctl.signal, undefined, calendar, policy).then(
        (r) => {
          setTimes(r.times);
          setFires(calendar ? (r.fires ?? []) : null);
          setBusy(false);
        },
        (e) => {
          if ((e as Error).name === 'AbortError') return;
          setTimes(null);
          setFires(null);
          setBusy(false);
          setCronErr(e instanceof ApiError ? e.message : String(e));
        },
      );
    }, 250);
    return () => {
      ctl.abort();
      window.clearTimeout(id);
    };
  }, [cron, tz, calendar, policy]);
  const presets = [
    ['Every 15 min', '*/15 * * * *'],
    ['Hourly', '0 * * * *'],
    ['Daily 02:00', '0 2 * * *'],
    ['Mondays 06:00', '0 6 * * 1'],
  ];
  const err = ctx.err('schedule') ?? cronErr;
  return (
    <Field label="Schedule (cron)" field="schedule" error={err} class="span2">
      <input
        name="schedule"
        class="mono"
        placeholder="minute hour day month weekday — empty for manual"
        value={cron}
        disabled={ctx.readOnly}
        onInput={(e) => ctx.set(['schedule'], val(e) || undefined)}
        onBlur={() => ctx.touch('schedule')}
      />
      {!ctx.readOnly && (
        <div class="chips">
          {presets.map(([l, c]) => (
            <button type="button" key={c} class={`chip ${cron === c ? 'chip-on' : ''}`} onClick={() => ctx.set(['schedule'], c)}>
              {l}
            </button>
          ))}
        </div>
      )}
      <div class="cron-preview" data-testid="cron-preview">
        {!cron.trim() ? (
          <span class="muted">Manual only: runs when you backfill or rerun it.</span>
        ) : busy && !times ? (
          <span class="muted">
            <Spinner /> computing fire times…
          </span>
        ) : times ? (
          <>
            <div class="muted small">Next fire times ({tz}):</div>
            <ol class="fire-times">
              {times.map((t) => (
                <li key={t}>
                  {fmtTime(t)} <span class="muted small">{fmtRelative(t)}</span>
                </li>
              ))}
            </ol>
            {fires && (
              <>
                <div class="muted small">
                  The cron's own times with calendar {calendar} ({policy}):
                </div>
                <ol class="fire-times" data-testid="cron-calendar">
                  {fires.map((f) => (
                    <li key={f.time} data-outcome={f.outcome}>
                      <span class={f.outcome === 'skipped' ? 'fire-skipped' : ''}>{fmtTime(f.time)}</span>{' '}
                      <span class={`fire-outcome fire-${f.outcome}`}>
                        {f.outcome === 'moved' && f.to ? `moved to ${fmtTime(f.to)}` : f.outcome}
                      </span>
                    </li>
                  ))}
                </ol>
              </>
            )}
          </>
        ) : null}
      </div>
    </Field>
  );
}
