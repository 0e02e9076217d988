// tokens.tsx - personal API tokens: create one (name, optional expiry), see
// its secret exactly once with a copy button, list the tokens you have
// (created, last used, expiry) and revoke them. A token is sent as
// "Authorization: Bearer <secret>" by scripts and CI jobs.
import { useState } from 'preact/hooks';
import { api, ApiError, type ApiToken } from '../api';
import { Confirm, Empty, ErrorBanner, Field, Loading, PageHead, Spinner, Unavailable, toast, useAsync, val } from '../components/ui';
import { fmtRelative, fmtShort } from '../format';

const EXPIRY: { label: string; days: number | null }[] = [
  { label: '30 days', days: 30 },
  { label: '90 days', days: 90 },
  { label: '1 year', days: 365 },
  { label: 'never', days: null },
];

function Secret({ secret, onDone }: { secret: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied(true);
    } catch {
      // No clipboard (plain http, denied permission): select the text instead.
      const el = document.querySelector<HTMLInputElement>('[data-testid="token-secret"]');
      el?.select();
      toast('Press Ctrl+C to copy the selected secret', 'error');
    }
  };
  return (
    <div class="secret-box" role="status">
      <div class="strong">Copy your new token now: it is shown only this once.</div>
      <div class="secret-row">
        <input class="mono" readOnly value={secret} aria-label="New token secret" data-testid="token-secret" onFocus={(e) => e.currentTarget.select()} />
        <button class="btn btn-primary" onClick={copy} data-testid="copy-secret">
          {copied ? 'Copied ✓' : 'Copy'}
        </button>
        <button class="btn btn-ghost" onClick={onDone}>
          Done
        </button>
      </div>
      <div class="muted small">
        Send it as <code>Authorization: Bearer …</code>. Orrery keeps only a hash of it.
      </div>
    </div>
  );
}

export function TokensPage() {
  const list = useAsync(() => api.tokens(), []);
  const [name, setName] = useState('');
  const [days, setDays] = useState<string>('90');
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [secret, setSecret] = useState<string | null>(null);
  const [revoke, setRevoke] = useState<ApiToken | null>(null);

  const create = async (e: Event) => {
    e.preventDefault();
    setErr(null);
    if (!name.trim() || name.length > 128) {
      setErr(new ApiError(400, 'EINVAL', 'give the token a name (1 to 128 characters), e.g. "ci-nightly"', 'name'));
      return;
    }
    const d = days === 'never' ? null : Number(days);
    const expires = d === null ? null : new Date(Date.now() + d * 86400e3).toISOString();
    setBusy(true);
    try {
      const r = await api.createToken(name.trim(), expires);
      setSecret(r.secret);
      setName('');
      list.reload();
    } catch (x) {
      setErr(x);
    } finally {
      setBusy(false);
    }
  };

  if (list.missing)
    return (
      <div>
        <PageHead title="API tokens" />
        <Unavailable feature="API tokens" endpoint="GET /api/v1/tokens">
          Once it exists, you can create tokens for scripts here.
        </Unavailable>
      </div>
    );
  const nameErr = err instanceof ApiError && err.field === 'name' ? err.message : null;
  // Newest first: the token just created is at the top.
  const items = [...(list.data?.items ?? [])].sort((a, b) => b.id - a.id);
  return (
    <div>
      <PageHead title="API tokens" sub="Tokens let scripts and CI call the Orrery API as you." />
      {secret && <Secret secret={secret} onDone={() => setSecret(null)} />}
      <form class="card pad" onSubmit={create} noValidate data-testid="token-form">
        <h2>New token</h2>
        <div class="row3">
          <Field label="Name" field="name" error={nameErr} hint="What uses it, so you know what to revoke">
            <input name="token-name" value={name} onInput={(e) => setName(val(e))} placeholder="ci-nightly" />
          </Field>
          <Field label="Expires after" field="expires_at" hint="Counted from now">
            <select name="token-expiry" value={days} onChange={(e) => setDays(val(e))}>
              {EXPIRY.map((x) => (
                <option key={x.label} value={x.days === null ? 'never' : String(x.days)}>
                  {x.label}
                </option>
              ))}
            </select>
          </Field>
          <button class="btn btn-primary" type="submit" disabled={busy}>
            {busy ? <Spinner /> : null} Create token
          </button>
        </div>
        {err && !nameErr ? <ErrorBanner error={err} /> : null}
      </form>
      <ErrorBanner error={list.error} onRetry={list.reload} />
      {list.loading && !list.data ? (
        <Loading what="tokens" />
      ) : items.length === 0 ? (
        !list.error && (
          <Empty title="No tokens yet" icon="🔑">
            Create one above; its secret is shown once.
          </Empty>
        )
      ) : (
        <div class="card">
          <table class="table" data-testid="token-table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Owner</th>
                <th>Created</th>
                <th>Last used</th>
                <th>Expires</th>
                <th class="right" />
              </tr>
            </thead>
            <tbody>
              {items.map((t) => {
                const expired = !!t.expires_at && new Date(t.expires_at).getTime() < Date.now();
                return (
                  <tr key={t.id} data-token={t.name}>
                    <td class="strong">{t.name}</td>
                    <td>{t.user}</td>
                    <td class="nowrap">{fmtShort(t.created_at)}</td>
                    <td class="nowrap">{t.last_used_at ? fmtRelative(t.last_used_at) : <span class="muted">never</span>}</td>
                    <td class="nowrap">
                      {t.expires_at ? (
                        <span class={expired ? 'danger-text' : ''}>{expired ? 'expired' : fmtShort(t.expires_at)}</span>
                      ) : (
                        <span class="muted">never</span>
                      )}
                    </td>
                    <td class="right">
                      <button class="btn btn-small btn-ghost danger-text" onClick={() => setRevoke(t)}>
                        Revoke
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {revoke && (
        <Confirm
          title={`Revoke token "${revoke.name}"?`}
          body="Scripts using it get 401 from now on. This cannot be undone."
          confirmLabel="Revoke"
          danger
          onClose={() => setRevoke(null)}
          onConfirm={async () => {
            await api.revokeToken(revoke.id);
            toast(`Token ${revoke.name} revoked`);
            list.reload();
          }}
        />
      )}
    </div>
  );
}
