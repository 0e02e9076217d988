// latest.ts - "state of the last run" of a task: its newest instance by
// schedule time (GET /instances?task_id=N&order=desc&limit=1). A short cache
// and a small concurrency limit keep the workflow view cheap.
import { api, type Instance } from './api';

const TTL_MS = 4000;
const CONCURRENCY = 6;

const cache = new Map<number, { at: number; p: Promise<Instance | null> }>();
let running = 0;
const queue: (() => void)[] = [];

function slot<T>(fn: () => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const go = () => {
      running++;
      fn()
        .then(resolve, reject)
        .finally(() => {
          running--;
          queue.shift()?.();
        });
    };
    if (running < CONCURRENCY) go();
    else queue.push(go);
  });
}

async function fetchLatest(taskId: number): Promise<Instance | null> {
  const page = await api.latest(taskId);
  return page.items[0] ?? null;
}

export function latestInstance(taskId: number, fresh = false): Promise<Instance | null> {
  const now = Date.now();
  const hit = cache.get(taskId);
  if (hit && !fresh && now - hit.at < TTL_MS) return hit.p;
  const p = slot(() => fetchLatest(taskId));
  cache.set(taskId, { at: now, p });
  p.catch(() => cache.delete(taskId));
  return p;
}
