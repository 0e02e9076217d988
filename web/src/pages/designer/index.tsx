// designer/index.tsx - the task designer: one form for creating and editing
// a task, generated from the task spec JSON Schema (schema.ts). Each schema
// property becomes a widget chosen by its shape (prop.tsx); a few fields get
// a richer widget by name: the cron schedule with its next fire times
// (cron.tsx), upstreams with a task picker (upstreams.tsx), pools with a pool
// picker (pools.tsx). The config section follows the chosen type's schema;
// the spec panel (spec-panel.tsx) shows the spec and its problems. This page
// loads the schema, the task and the pools, then hands them to the form
// (form.tsx).
import { api, type Pool } from '../../api';
import { ErrorBanner, Loading, useAsync } from '../../components/ui';
import { loadTaskSchema } from '../../schema';
import { DesignerForm } from './form';

export function DesignerPage({ id }: { id: number | null }) {
  const data = useAsync(
    async () => {
      const [root, task, pools] = await Promise.all([
        loadTaskSchema(),
        id ? api.task(id) : Promise.resolve(null),
        api.pools().then(
          (p) => p.items,
          () => [] as Pool[],
        ),
      ]);
      return { root, task, pools };
    },
    [id],
  );
  if (data.error) return <ErrorBanner error={data.error} onRetry={data.reload} />;
  if (!data.data || data.loading) return <Loading what={id ? 'the task' : 'the designer'} />;
  return <DesignerForm key={`${id}-${data.data.task?.version ?? 0}`} root={data.data.root} task={data.data.task} pools={data.data.pools} />;
}
