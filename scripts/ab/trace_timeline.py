# usage: python3 scripts/ab/trace_timeline.py RUN.log [WALL_S]
#
# The TR lines of a run of a build instrumented by scripts/ab/trace.py (its
# stderr, RUN.log) -> one line per process, times in seconds from the
# parent's main: the parent (fork, each worker's last case done, eof, reaped,
# merge) and each worker (open, opened, first case, rows end, exit). WALL_S,
# the run's wall time measured outside, is printed beside the parent's.
import sys, collections
if len(sys.argv) < 2: sys.exit("usage: python3 scripts/ab/trace_timeline.py RUN.log [WALL_S]")
ev = collections.defaultdict(list)
t0 = None; parent = None
for line in open(sys.argv[1], errors="replace"):
    if not line.startswith("TR "): continue
    p = line.split(None, 3)
    t, pid, what = float(p[1]), int(p[2]), p[3].strip()
    if what == "main" and t0 is None: t0, parent = t, pid
    ev[pid].append((t, what))
if t0 is None: print("    no trace"); sys.exit()
wall = float(sys.argv[2]) if len(sys.argv) > 2 else None
for pid, es in ev.items():
    if pid == parent:
        keep = [(t, w) for t, w in es if not w.split()[-2:-1] == ["done"] or False]
        # parent: forked, each worker's last done, eof, reaped, merge, merged, main ret
        last = {}
        for t, w in es:
            if " done " in w: last[w.split()[0]] = t
        s = " ".join(f"{w} {t - t0:.2f}" for t, w in es if " done " not in w)
        s += " | last done " + " ".join(f"{k} {v - t0:.2f}" for k, v in sorted(last.items()))
        print(f"    parent: {s}" + (f" | wall {wall:.2f}" if wall else ""))
for pid, es in ev.items():
    if pid != parent:
        print("    worker: " + " ".join(f"{w} {t - t0:.2f}" for t, w in es))
