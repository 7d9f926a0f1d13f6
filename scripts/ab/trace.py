# usage: python3 scripts/ab/trace.py   (in the root of a SCRATCH checkout of 4d27d30, the tree it patches:
#        git worktree add /tmp/t 4d27d30; it edits cli/ in place by exact text, so a later tree needs its strings updated)
#
# Instruments cli/ for a timeline of a --devices run: each process prints
# "TR <seconds> <pid> <event>" lines on stderr (main, open/opened, first case,
# rows end, the parent's fork, each worker's cases done, eof, reaped, merge).
# Every edit asserts the text it replaces, so a tree it no longer fits fails
# loudly. Then build and run, and read the lines with trace_timeline.py:
#   cp -r . /tmp/kb-trace && cd /tmp/kb-trace && python3 scripts/ab/trace.py &&
#   make -j kbench && ./kbench sweep configs/default.json --quiet --devices all 2> run.log;
#   python3 scripts/ab/trace_timeline.py run.log
# (the parent:/worker: lines of results/curated/2026-11-26-h100x4-devices/gate-ab/summary.txt)
def sub(p, old, new, cnt=1):
    s=open(p).read(); assert s.count(old)==cnt, (p, old, s.count(old)); s=s.replace(old,new); open(p,'w').write(s)
sub('cli/kbench.h', "double kb_now_s(void); /* a monotonic clock, seconds */\n",
 "double kb_now_s(void); /* a monotonic clock, seconds */\n#include <stdio.h>\n#include <unistd.h>\n#define KB_TR(...) do { fprintf(stderr, \"TR %.4f %d \", kb_now_s(), (int)getpid()); fprintf(stderr, __VA_ARGS__); fputc('\\n', stderr); fflush(stderr); } while (0)\n")
sub('cli/main.c', "    kb_host_recycle();\n    return kb_main(argc, argv);", "    KB_TR(\"main\");\n    kb_host_recycle();\n    int r = kb_main(argc, argv);\n    KB_TR(\"main ret\");\n    return r;")
sub('cli/run.c', "    int rc = kb_device_open(&dev);\n", "    KB_TR(\"open\");\n    int rc = kb_device_open(&dev);\n    KB_TR(\"opened\");\n")
sub('cli/run.c', "            kb_report_start(rep, end - mark[0], parts);", "            kb_report_start(rep, end - mark[0], parts);\n            KB_TR(\"first\");")
sub('cli/run.c', "    if (info->case_done) rows_sync(&sink, 1); /* the cases not said done yet */", "    KB_TR(\"rows end\");\n    if (info->case_done) rows_sync(&sink, 1); /* the cases not said done yet */\n    KB_TR(\"synced\");")
sub('cli/run.c', "    kb_timer_destroy(timer);\n    if (fatal && fatal_what[0])", "    KB_TR(\"closed\");\n    kb_timer_destroy(timer);\n    KB_TR(\"timer gone\");\n    if (fatal && fatal_what[0])")
sub('cli/devices.c', "            _exit(kb_run_plan(plan, &wi));", "            int wr = kb_run_plan(plan, &wi);\n            KB_TR(\"exit\");\n            _exit(wr);")
sub('cli/devices.c', "    if (rc) halt = 1; /* a worker could not start: stop the others after their case */", "    KB_TR(\"forked\");\n    if (rc) halt = 1; /* a worker could not start: stop the others after their case */")
sub('cli/devices.c', "                    oh[w]++;\n                    done++;", "                    oh[w]++;\n                    done++;\n                    KB_TR(\"w%d done %d\", w, done);")
sub('cli/devices.c', "            /* the worker is gone: the cases it had not written whole with it */\n            close(from[w]);", "            /* the worker is gone: the cases it had not written whole with it */\n            KB_TR(\"w%d eof\", w);\n            close(from[w]);")
sub('cli/devices.c', "            while (waitpid(pid[w], &status[w], 0) < 0 && errno == EINTR) {}\n            alive--;", "            while (waitpid(pid[w], &status[w], 0) < 0 && errno == EINTR) {}\n            KB_TR(\"w%d reaped\", w);\n            alive--;")
sub('cli/devices.c', "        int m = np ? kb_merge_files(parts, np, json, csv, o->quiet, expected) : KB_EXIT_CUDA;", "        KB_TR(\"merge\");\n        int m = np ? kb_merge_files(parts, np, json, csv, o->quiet, expected) : KB_EXIT_CUDA;\n        KB_TR(\"merged\");")
