// spec-panel.tsx - the designer's side panel: whether the spec is valid
// against the task schema, the problems (each a button that takes the user to
// the field), and the spec as JSON as it will be sent.
import type { Obj } from './state';

export function SpecPanel(props: { spec: Obj; errors: Record<string, string>; onFocus: (path: string) => void }) {
  const nErr = Object.keys(props.errors).length;
  return (
    <aside class="card pad spec-panel" data-testid="spec-panel">
      <h2>Spec</h2>
      <div class={`check-line ${nErr ? 'check-bad' : 'check-ok'}`}>
        {nErr ? `✕ ${nErr} problem${nErr === 1 ? '' : 's'}` : '✓ valid against task.schema.json'}
      </div>
      {nErr > 0 && (
        <ul class="err-list">
          {Object.entries(props.errors)
            .slice(0, 8)
            .map(([p, m]) => (
              <li key={p}>
                <button type="button" onClick={() => props.onFocus(p)}>
                  {p}
                </button>
                : {m}
              </li>
            ))}
        </ul>
      )}
      <pre class="spec-json mono">{JSON.stringify(props.spec, null, 2)}</pre>
    </aside>
  );
}
