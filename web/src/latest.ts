// latest.ts - "state of the last run" of a task. galaxyd lists instances in
// id order only, so the latest one (by schedule time) is found by reading
// the task's instances, at most MAX_PAGES pages of 1000; a short cache and a
// small concurrency limit keep the task list and the workflow view cheap.
import { api, type Instance } from './api';

const MAX_PAGES = 3;
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
  let best: Instance | null = null;
  let token: string | undefined;
  for (let i = 0; i < MAX_PAGES; i++) {
    const page = await api.instances({ task_id: taskId, limit: 1000, page_token: token });
    for (const it of page.items)
      if (!best || it.schedule_time > best.schedule_time || (it.schedule_time === best.schedule_time && it.id > best.id))
        best = it;
    if (!page.next_page_token) break;
    token = page.next_page_token;
  }
  return best;
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
