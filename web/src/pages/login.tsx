// login.tsx - the sign-in page. Errors from the API are shown next to the
// field they name (error.field), a rate-limited login says when to retry.
import { useState } from 'preact/hooks';
import { api, ApiError, type Me } from '../api';
import { Field, Spinner, errorText, val } from '../components/ui';

export function LoginPage({ onLogin }: { onLogin: (me: Me) => void }) {
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<ApiError | Error | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setErr(null);
    if (!name.trim()) {
      setErr(new ApiError(400, 'EINVAL', 'Enter your user name', 'name'));
      return;
    }
    if (!password) {
      setErr(new ApiError(400, 'EINVAL', 'Enter your password', 'password'));
      return;
    }
    setBusy(true);
    try {
      const r = await api.login(name.trim(), password);
      onLogin({ id: r.user.id, name: r.user.name, role: r.user.role, teams: r.user.teams });
    } catch (x) {
      setErr(x as Error);
      setBusy(false);
    }
  };
  const fieldErr = (f: string) => (err instanceof ApiError && err.field === f ? err.message : null);
  const general = err && !(err instanceof ApiError && (err.field === 'name' || err.field === 'password'));
  return (
    <div class="login-page">
      <div class="login-side">
        <div class="brand brand-large">
          <span class="brand-mark">◉</span> Orrery
        </div>
        <p class="login-tag">Schedule, run and watch every task of your data platform — one graph, one place.</p>
        <svg class="login-art" viewBox="0 0 240 140" aria-hidden="true">
          <g stroke="rgba(255,255,255,.35)" stroke-width="2" fill="none">
            <path d="M40 30 C80 30 80 70 120 70" />
            <path d="M40 110 C80 110 80 70 120 70" />
            <path d="M120 70 C160 70 160 40 200 40" />
            <path d="M120 70 C160 70 160 100 200 100" />
          </g>
          <circle cx="40" cy="30" r="9" fill="#23a55a" />
          <circle cx="40" cy="110" r="9" fill="#23a55a" />
          <circle cx="120" cy="70" r="11" fill="#5b8def" />
          <circle cx="200" cy="40" r="9" fill="#8a94a6" />
          <circle cx="200" cy="100" r="9" fill="#8a94a6" />
        </svg>
      </div>
      <form class="login-card" onSubmit={submit} noValidate>
        <h1>Sign in</h1>
        <p class="muted">Use the account your Orrery admin gave you.</p>
        <Field label="User name" error={fieldErr('name')} field="name">
          <input
            name="name"
            autocomplete="username"
            value={name}
            onInput={(e) => setName(val(e))}
            autoFocus
          />
        </Field>
        <Field label="Password" error={fieldErr('password')} field="password">
          <input
            name="password"
            type="password"
            autocomplete="current-password"
            value={password}
            onInput={(e) => setPassword(val(e))}
          />
        </Field>
        {general && (
          <div class="banner banner-error" role="alert">
            {errorText(err)}
          </div>
        )}
        <button class="btn btn-primary btn-block" type="submit" disabled={busy}>
          {busy ? <Spinner /> : null} Sign in
        </button>
      </form>
    </div>
  );
}
