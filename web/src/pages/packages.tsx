// packages.tsx - code packages: upload a .tar.gz (with a progress bar; the
// archive is streamed to galaxyd as the request body), and the list, newest
// first, with each executor's deployment status (pending, ok, failed and its
// message). The list refreshes every 5 s while a deployment is pending.
import { useRef, useState } from 'preact/hooks';
import { api, ApiError, uploadPackage, type CodePackage, type Deployment } from '../api';
import { Empty, ErrorBanner, Field, Loading, PageHead, Unavailable, toast, useAsync, useInterval, val } from '../components/ui';
import { fmtRelative } from '../format';
import { canAct, useMe } from '../session';

const NAME_RE = /^[A-Za-z0-9_.-]{1,128}$/;

export function fmtBytes(n: number): string {
  if (!Number.isFinite(n)) return '—';
  if (n < 1024) return `${n} B`;
  const u = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < u.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${u[i]}`;
}

function DeployBadge({ d }: { d: Deployment }) {
  const cls = d.result === 'ok' ? 'st-success' : d.result === 'failed' ? 'st-failed' : 'st-waiting';
  return (
    <span class={`badge ${cls}`} title={d.message || d.result} data-deploy={`${d.executor}:${d.result}`}>
      <span class="dot" />
      {d.executor} · {d.result}
      {d.result === 'failed' && d.message ? `: ${d.message}` : ''}
    </span>
  );
}

function Upload({ onDone }: { onDone: (p: CodePackage) => void }) {
  const [name, setName] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<number | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const input = useRef<HTMLInputElement>(null);
  const pick = (f: File | null) => {
    setFile(f);
    setErr(null);
    if (f && !name) setName(f.name.replace(/\.(tar\.gz|tgz)$/i, ''));
  };
  const go = async (e: Event) => {
    e.preventDefault();
    setErr(null);
    if (!NAME_RE.test(name)) {
      setErr(new ApiError(400, 'EINVAL', 'letters, digits, "_", "." or "-", 1 to 128', 'name'));
      return;
    }
    if (!file) {
      setErr(new ApiError(400, 'EINVAL', 'choose a .tar.gz archive', 'file'));
      return;
    }
    if (!/\.(tar\.gz|tgz)$/i.test(file.name)) {
      setErr(new ApiError(400, 'EINVAL', `${file.name} is not a .tar.gz archive`, 'file'));
      return;
    }
    setProgress(0);
    try {
      const p = await uploadPackage(name, file, setProgress);
      toast(`Package ${p.name} uploaded`);
      setFile(null);
      setName('');
      if (input.current) input.current.value = '';
      onDone(p);
    } catch (x) {
      setErr(x);
    } finally {
      setProgress(null);
    }
  };
  const fe = (f: string) => (err instanceof ApiError && err.field === f ? err.message : null);
  return (
    <form class="card pad" onSubmit={go} noValidate data-testid="package-upload">
      <h2>Upload a package</h2>
      <div class="row3">
        <div
          class={`dropzone ${file ? 'dropzone-full' : ''}`}
          onDragOver={(e) => e.preventDefault()}
          onDrop={(e) => {
            e.preventDefault();
            pick(e.dataTransfer?.files?.[0] ?? null);
          }}
        >
          <input
            ref={input}
            type="file"
            name="archive"
            aria-label="Archive"
            accept=".tar.gz,.tgz,application/gzip"
            onChange={(e) => pick(e.currentTarget.files?.[0] ?? null)}
          />
          <div class="small muted">{file ? `${file.name} · ${fmtBytes(file.size)}` : 'Drop a .tar.gz here or choose one (at most 256 MB)'}</div>
          {fe('file') && <div class="field-error">{fe('file')}</div>}
        </div>
        <Field label="Package name" field="name" error={fe('name')} hint="Tasks refer to a package by this name">
          <input name="package-name" value={name} onInput={(e) => setName(val(e))} placeholder="etl-scripts" />
        </Field>
        <button class="btn btn-primary" type="submit" disabled={progress !== null}>
          Upload
        </button>
      </div>
      {progress !== null && (
        <div class="progress" role="progressbar" aria-valuenow={Math.round(progress * 100)} aria-valuemin={0} aria-valuemax={100}>
          <div class="progress-fill" style={{ width: `${Math.round(progress * 100)}%` }} />
          <span class="small">{progress < 1 ? `sending… ${Math.round(progress * 100)}%` : 'checking and storing…'}</span>
        </div>
      )}
      {err && !fe('name') && !fe('file') ? <ErrorBanner error={err} /> : null}
    </form>
  );
}

export function PackagesPage() {
  const me = useMe();
  const list = useAsync(() => api.packages(), []);
  const pending = (list.data?.items ?? []).some((p) => p.deployments.some((d) => d.result === 'pending'));
  useInterval(list.reload, 5000, pending);
  if (list.missing)
    return (
      <div>
        <PageHead title="Code packages" />
        <Unavailable feature="Code packages" endpoint="GET /api/v1/packages">
          Once it exists, archives uploaded here are deployed to every executor.
        </Unavailable>
      </div>
    );
  const items = list.data?.items ?? [];
  return (
    <div>
      <PageHead title="Code packages" sub="Archives of scripts and binaries that every executor unpacks before tasks use them." />
      {canAct(me) && <Upload onDone={() => list.reload()} />}
      <ErrorBanner error={list.error} onRetry={list.reload} />
      {list.loading && !list.data ? (
        <Loading what="packages" />
      ) : items.length === 0 ? (
        !list.error && (
          <Empty title="No packages yet" icon="▣">
            Upload a .tar.gz of your task's code; executors fetch and unpack it.
          </Empty>
        )
      ) : (
        <div class="card">
          <table class="table" data-testid="package-table">
            <thead>
              <tr>
                <th>Package</th>
                <th>Size</th>
                <th>SHA-256</th>
                <th>Uploaded</th>
                <th>Deployments</th>
              </tr>
            </thead>
            <tbody>
              {items.map((p) => (
                <tr key={p.id} data-package={p.name}>
                  <td>
                    <span class="strong">{p.name}</span> <span class="muted small">#{p.id}</span>
                  </td>
                  <td class="nowrap">{fmtBytes(p.size)}</td>
                  <td>
                    <code title={p.sha256}>{p.sha256.slice(0, 12)}…</code>
                  </td>
                  <td class="nowrap">
                    {fmtRelative(p.created_at)} <span class="muted small">by {p.created_by.replace(/^user:/, '')}</span>
                  </td>
                  <td>
                    {p.deployments.length === 0 ? (
                      <span class="muted small">no executor has reported yet</span>
                    ) : (
                      <div class="badges">
                        {p.deployments.map((d) => (
                          <DeployBadge key={d.executor} d={d} />
                        ))}
                      </div>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
