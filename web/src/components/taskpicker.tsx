// taskpicker.tsx - a type-ahead task chooser (an ARIA 1.2 combobox): the
// names come from GET /tasks/suggest as the user types (debounced, the
// previous request aborted), so it stays quick with ten thousand tasks
// where a <select> of every task would not. Arrow keys move through the
// list, Enter picks, Escape closes; "Any task" clears the choice.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type TaskSuggestion } from '../api';
import './objects.css';

let pickerSeq = 0;

export function TaskPicker(props: {
  label: string; // the accessible name ("Task")
  value: { id: number; name: string } | null;
  onChange: (t: { id: number; name: string } | null) => void;
  placeholder?: string;
}) {
  const [id] = useState(() => `taskpick-${++pickerSeq}`);
  const [text, setText] = useState(props.value?.name ?? '');
  const [open, setOpen] = useState(false);
  const [items, setItems] = useState<TaskSuggestion[]>([]);
  const [active, setActive] = useState(-1);
  const [busy, setBusy] = useState(false);
  const abort = useRef<AbortController | null>(null);
  const timer = useRef<number | undefined>(undefined);
  const blurTimer = useRef<number | undefined>(undefined);

  // Follow the chosen task when it changes from outside (the URL).
  useEffect(() => setText(props.value?.name ?? ''), [props.value?.id, props.value?.name]);

  const fetchFor = (q: string) => {
    window.clearTimeout(timer.current);
    timer.current = window.setTimeout(async () => {
      abort.current?.abort();
      const ac = new AbortController();
      abort.current = ac;
      setBusy(true);
      try {
        const r = await api.suggestTasks(q.trim(), 12, ac.signal);
        setItems(r.items);
        setActive(r.items.length ? 0 : -1);
      } catch (e) {
        if ((e as Error).name !== 'AbortError') setItems([]);
      } finally {
        if (abort.current === ac) setBusy(false);
      }
    }, 120);
  };
  useEffect(() => () => (window.clearTimeout(timer.current), window.clearTimeout(blurTimer.current), abort.current?.abort()), []);

  const pick = (t: TaskSuggestion | null) => {
    setOpen(false);
    setText(t ? t.name : '');
    props.onChange(t ? { id: t.id, name: t.name } : null);
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'ArrowDown') {
      e.preventDefault();
      if (!open) {
        setOpen(true);
        fetchFor(text);
      } else setActive((a) => Math.min(items.length - 1, a + 1));
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      setActive((a) => Math.max(0, a - 1));
    } else if (e.key === 'Enter') {
      if (open && active >= 0 && items[active]) {
        e.preventDefault();
        pick(items[active]);
      }
    } else if (e.key === 'Escape') {
      if (open) {
        e.preventDefault();
        setOpen(false);
      }
    }
  };
  const listId = `${id}-list`;
  return (
    <div class="taskpick">
      <input
        id={id}
        type="text"
        role="combobox"
        aria-label={props.label}
        aria-autocomplete="list"
        aria-expanded={open}
        aria-controls={listId}
        aria-activedescendant={open && active >= 0 ? `${id}-opt-${active}` : undefined}
        autocomplete="off"
        placeholder={props.placeholder ?? 'Any task — type to search'}
        value={text}
        onInput={(e) => {
          const v = (e.currentTarget as HTMLInputElement).value;
          setText(v);
          setOpen(true);
          fetchFor(v);
        }}
        onFocus={() => {
          window.clearTimeout(blurTimer.current); // a blur just before must not close it now
          setOpen(true);
          fetchFor(text === props.value?.name ? '' : text);
        }}
        onBlur={() => (blurTimer.current = window.setTimeout(() => setOpen(false), 150))}
        onKeyDown={onKey}
      />
      {props.value && (
        <button type="button" class="taskpick-clear" aria-label={`Clear the task filter (${props.value.name})`} onClick={() => pick(null)}>
          ×
        </button>
      )}
      {open && (
        <ul class="taskpick-list" id={listId} role="listbox" aria-label={`${props.label} suggestions`}>
          {items.length === 0 ? (
            <li class="taskpick-empty" role="option" aria-disabled="true" aria-selected="false">
              {busy ? 'Searching…' : 'No active task matches'}
            </li>
          ) : (
            items.map((t, i) => (
              <li
                key={t.id}
                id={`${id}-opt-${i}`}
                role="option"
                aria-selected={i === active}
                class={i === active ? 'active' : ''}
                onMouseDown={(e) => {
                  e.preventDefault();
                  pick(t);
                }}
              >
                <span class="strong">{t.name}</span> <span class="muted small">{t.team}</span>
              </li>
            ))
          )}
        </ul>
      )}
    </div>
  );
}
