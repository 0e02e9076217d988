#!/usr/bin/env python3
"""tests/bench/sort/threads.py - run one command and say, per thread, where
its time went; threads.sh runs sortd under it.

    threads.py [--timeline] [--waits] [--out FILE] -- COMMAND...

Every 50 ms it reads /proc/PID/task/*/stat and schedstat from this one
process (no command is started per sample, so the sampling itself costs
little of the two cores it measures) and prints, per thread name (threads of
one name added up):

  CPU        user + system seconds (the first thread is named main);
  run queue  seconds runnable but waiting for a core (the machine's load);
  slept      seconds neither running nor runnable: waiting for another
             thread, a lock, a pack, or I/O;

and the wall time, the machine's idle core-seconds during the run and the
command's peak RSS.

--timeline  also one line per half second: the cores each thread used and
            the machine's idle cores (idle + iowait from /proc/stat), which
            shows when the cores stand idle, not only how much.
--waits     also what the sleeping threads waited for: the top frames of
            /proc/PID/task/TID/stack of each sample in which a thread slept
            (needs root), counted per thread and stack.
--out FILE  the command's standard output goes to FILE.

Bounded: at most 20 minutes of sampling; the command is left to finish.
"""
import collections
import os
import subprocess
import sys
import time

TICK = os.sysconf('SC_CLK_TCK')
PERIOD = 0.05
MAX_SAMPLES = int(1200 / PERIOD)


def machine_idle():
    with open('/proc/stat') as f:
        v = f.readline().split()
    return (int(v[4]) + int(v[5])) / TICK


def sample(pid, waits):
    """{tid: (name, cpu_s, run_s, queue_s, state)} and, with waits, the
    stacks of the sleeping threads."""
    out, stacks = {}, []
    try:
        tids = os.listdir(f'/proc/{pid}/task')
    except OSError:
        return out, stacks
    for tid in tids:
        d = f'/proc/{pid}/task/{tid}'
        try:
            with open(d + '/stat') as f:
                s = f.read()
            with open(d + '/schedstat') as f:
                on_ns, queue_ns, _ = f.read().split()
        except (OSError, ValueError):
            continue
        name = 'main' if tid == str(pid) else s[s.index('(') + 1:s.rindex(')')]
        f = s[s.rindex(')') + 2:].split()
        out[tid] = (name, (int(f[11]) + int(f[12])) / TICK, int(on_ns) / 1e9,
                    int(queue_ns) / 1e9, f[0])
        if waits and f[0] in 'SD':
            try:
                with open(d + '/stack') as fh:
                    frames = [ln.split()[1].split('+')[0] for ln in fh if ln.strip()]
            except (OSError, IndexError):
                continue
            frames = [fr for fr in frames
                      if not fr.startswith(('__schedule', 'schedule', 'entry_SYSCALL',
                                            'do_syscall', '__x64_sys', 'do_futex'))]
            stacks.append((name, f[0], '<'.join(frames[:5])))
    return out, stacks


def main():
    args = sys.argv[1:]
    timeline = waits = False
    child_out = None
    while args and args[0].startswith('--'):
        opt = args.pop(0)
        if opt == '--':
            break
        if opt == '--timeline':
            timeline = True
        elif opt == '--waits':
            waits = True
        elif opt == '--out' and args:
            child_out = open(args.pop(0), 'w')
        else:
            sys.exit(f'threads.py: unknown option {opt}')
    if not args:
        sys.exit('usage: threads.py [--timeline] [--waits] [--out FILE] -- COMMAND...')
    start = time.monotonic()
    proc = subprocess.Popen(args, stdout=child_out)
    first, last = {}, {}
    stack_count = collections.Counter()
    idle0 = prev_idle = machine_idle()
    prev_cpu, prev_t = {}, start
    n = 0
    status = usage = None
    while n < MAX_SAMPLES:
        pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status, usage = st, ru  # reaped here: its rusage has the peak RSS
            break
        n += 1
        now = time.monotonic()
        cur, stacks = sample(proc.pid, waits)
        for tid, v in cur.items():
            first.setdefault(tid, (now,) + v)
            last[tid] = (now,) + v
        stack_count.update(stacks)
        if timeline and now - prev_t >= 0.5:
            per = collections.defaultdict(float)
            for tid, v in last.items():
                per[v[1]] += v[2]
            idle = machine_idle()
            dt = now - prev_t
            cols = ' '.join(f'{k}={(per[k] - prev_cpu.get(k, 0)) / dt:.2f}' for k in sorted(per))
            print(f'{now - start:6.1f} s  idle {(idle - prev_idle) / dt:4.2f}  {cols}',
                  flush=True)
            prev_cpu, prev_t, prev_idle = dict(per), now, idle
        time.sleep(PERIOD)
    if status is None:
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    rc = os.waitstatus_to_exitcode(status)
    proc.returncode = rc  # reaped with wait4, not by Popen
    if rc < 0:
        rc = 128 - rc  # killed by a signal, as a shell reports it
    rows = collections.OrderedDict()
    for tid in sorted(first, key=lambda t: first[t][0]):
        t0, name, cpu0, on0, q0, _ = first[tid]
        t1, _, cpu1, on1, q1, _ = last[tid]
        r = rows.setdefault(name, [0.0, 0.0, 0.0])
        r[0] += cpu1
        r[1] += q1
        r[2] += max(0.0, (t1 - t0) - (on1 - on0) - (q1 - q0))
    print(f'wall {wall:.2f} s, machine idle {machine_idle() - idle0:.2f} core-seconds, '
          f'peak RSS {usage.ru_maxrss / 1024:.0f} MB, load {os.getloadavg()[0]:.2f}, exit {rc}')
    for name, (cpu, queue, slept) in rows.items():
        print(f'  {name:16s} CPU {cpu:6.2f} s  run queue {queue:6.2f} s  slept {slept:6.2f} s')
    print(f'  all threads CPU {sum(r[0] for r in rows.values()):.2f} s')
    if waits:
        print(f'waits (samples every {PERIOD * 1000:.0f} ms while a thread slept):')
        for (name, st, stack), c in stack_count.most_common(16):
            print(f'  {c:6d} {name:14s} {st} {stack[:140]}')
    return rc


if __name__ == '__main__':
    sys.exit(main())
