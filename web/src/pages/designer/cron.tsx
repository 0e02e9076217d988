// cron.tsx - the schedule field of the designer: the cron expression with a
// few presets, and its next fire times (asked from galaxyd's
// /schedule/next as the user types, so the preview uses the same cron and
// time-zone code as the scheduler).
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from '../../api';
import { Field, Spinner, val } from '../../components/ui';
import { fmtRelative, fmtTime } from '../../format';
import type { Ctx } from './state';

export function Cron({ ctx }: { ctx: Ctx }) {
  const cron = (ctx.spec.schedule as string | undefined) ?? '';
  const tz = (ctx.spec.timezone as string | undefined) || 'UTC';
  const [times, setTimes] = useState<string[] | null>(null);
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
      api.scheduleNext(cron.trim(), tz, 5, ctl.signal).then(
        (r) => {
          setTimes(r.times);
          setBusy(false);
        },
        (e) => {
          if ((e as Error).name === 'AbortError') return;
          setTimes(null);
          setBusy(false);
          setCronErr(e instanceof ApiError ? e.message : String(e));
        },
      );
    }, 250);
    return () => {
      ctl.abort();
      window.clearTimeout(id);
    };
  }, [cron, tz]);
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
          </>
        ) : null}
      </div>
    </Field>
  );
}
