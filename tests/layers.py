#!/usr/bin/env python3
"""The house's rules, read from the code (tests/run.sh runs this; docs/layout.md
says why each holds).

    tests/layers.py [BUILD_DIR]

Rooms and their layers, top to bottom; a file may use (include, or call
into) its own layer and those below, never one above:

    5  cli/*.c, cli/*.h      the command line: main, help, compare, selftest
    4  cli/fleet/            several GPUs: --devices, --shard, merge
    3  cli/harness/          one plan on one GPU
    2  cli/report/           table, CSV, JSON, files
    1  cli/core/, cli/ops/, kernels/, refs/, include/
                             the op contract and its language; the ops

Checks, each a PASS or FAIL line:
  - every host file is in a room;
  - includes go down or sideways (by the layers above), never up;
  - no loop among the files: in the include graph (a file's .c and .h are one
    node), and in the calls, read from the object files' symbols (nm) under
    BUILD_DIR (default build/) where they are built;
  - the harness names no fleet: no include of cli/fleet/, no name that a fleet
    header declares;
  - a .c declares no function or variable of another file (extern): every
    call goes through a header, so the include graph shows it;
  - no header over 300 lines, no host function over 120 lines.
Exits 1 when a check fails.
"""
import collections
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(ROOT)
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("KB_BUILD", "build")
MAX_HEADER, MAX_FUNCTION = 300, 120
LAYER = {"cli": 5, "cli/fleet": 4, "cli/harness": 3, "cli/report": 2, "cli/core": 1, "cli/ops": 1}
results = []


def check(name, problems):
    results.append((name, problems))


def room(path):
    d = os.path.dirname(path)
    if d in LAYER:
        return d
    top = path.split("/")[0]
    return top if top in ("kernels", "refs", "include") else None


def layer(path):
    r = room(path)
    return LAYER.get(r, 1) if r else None


def strip(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"'(\\.|[^'\\\n])*'", "''", text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


host = sorted(
    glob.glob("cli/**/*.[ch]", recursive=True)
    + glob.glob("refs/*.[ch]")
    + glob.glob("include/*.h")
    + glob.glob("kernels/*.h")
    + glob.glob("kernels/*/*.[ch]")
)
source = host + sorted(glob.glob("kernels/**/*.cu", recursive=True) + glob.glob("kernels/**/*.cuh", recursive=True))

# ---- rooms -------------------------------------------------------------
check("every host file is in a room", [f"{f}: in no room (docs/layout.md)" for f in host if room(f) is None])

# ---- includes ----------------------------------------------------------
includes = {}
for f in source:
    incs = []
    for m in re.finditer(r'^\s*#\s*include\s+"([^"]+)"', open(f).read(), re.M):
        target = os.path.normpath(os.path.join(os.path.dirname(f), m.group(1)))
        if target.startswith("build/"):
            continue  # generated (git.h)
        incs.append(target)
    includes[f] = incs

missing = [f"{f}: includes {t}, which is not there" for f in source for t in includes[f] if not os.path.exists(t)]
check("every include names a file of the tree", missing)

up = []
for f in host:
    for t in includes[f]:
        if layer(t) is not None and layer(f) is not None and layer(t) > layer(f):
            up.append(f"{f} (layer {layer(f)}) includes {t} (layer {layer(t)})")
check("includes go down the layers, never up", up)


def node(path):
    """a file's node: its path without the extension; X_int.h (a module's
    private header, for its own files) is X's"""
    n = os.path.splitext(path)[0]
    return n[:-4] if n.endswith("_int") else n


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


inc_graph = collections.defaultdict(set)
for f in source:
    for t in includes[f]:
        if node(t) != node(f):
            inc_graph[node(f)].add(node(t))
def explain(graph, comps):
    """each loop, and the edges inside it"""
    out = []
    for c in comps:
        out.append("loop: " + " ".join(c))
        out += [f"  {a} -> {b}" for a in c for b in sorted(graph[a]) if b in c]
    return out


check("no loop in the include graph (a file's .c and .h one node)", explain(inc_graph, cycles(inc_graph)))

# ---- calls, from the objects -------------------------------------------
objs = {}
for f in source:
    if f.endswith((".c", ".cu")):
        o = os.path.join(BUILD, os.path.splitext(f)[0] + ".o")
        if os.path.exists(o):
            objs[node(f)] = o
if len(objs) < len([f for f in source if f.endswith((".c", ".cu"))]) or subprocess.call(
        ["sh", "-c", "command -v nm >/dev/null"]) != 0:
    results.append(("no loop in the calls between files (nm)", None))  # skipped: not built
else:
    defined, undefined = {}, collections.defaultdict(set)
    for n, o in objs.items():
        for line in subprocess.run(["nm", o], capture_output=True, text=True).stdout.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBRVWG":
                defined.setdefault(p[2], n)
            elif len(p) == 2 and p[0] == "U":
                undefined[n].add(p[1])
    call_graph = collections.defaultdict(set)
    why = {}
    for n in objs:
        for s in undefined[n]:
            d = defined.get(s)
            if d and d != n:
                call_graph[n].add(d)
                why.setdefault((n, d), s)
    check("no loop in the calls between files (nm)", explain(call_graph, cycles(call_graph)))
    up = [f"{a} calls {b} ({why[a, b]}), a layer above" for a in sorted(call_graph) for b in sorted(call_graph[a])
          if layer(b + ".c") > layer(a + ".c")]
    check("calls go down the layers, never up (nm)", up)

# ---- the harness knows no worker ---------------------------------------
fleet_names = set()
for h in glob.glob("cli/fleet/*.h"):
    text = strip(open(h).read())
    fleet_names |= set(re.findall(r"\b(kb_\w+)\s*\(", text))
    fleet_names |= set(re.findall(r"\}\s*(kb_\w+)\s*;", text))
    fleet_names |= set(re.findall(r"typedef\s+struct\s+\w+\s+(kb_\w+)\s*;", text))
    fleet_names |= set(re.findall(r"#\s*define\s+(KB_\w+)", text)) - {m for m in re.findall(r"#\s*define\s+(KB_\w+_H)\b", text)}
named = []
for f in glob.glob("cli/harness/*.[ch]"):
    text = strip(open(f).read())
    for t in includes[f]:
        if t.startswith("cli/fleet/"):
            named.append(f"{f} includes {t}")
    for w in sorted(set(re.findall(r"\b\w+\b", text)) & fleet_names):
        named.append(f"{f} names {w} (cli/fleet/)")
check("the harness includes and names nothing of the fleet", named)

# ---- every call through a header ---------------------------------------
externs = []
for f in host:
    if f.endswith(".c"):
        for i, line in enumerate(strip(open(f).read()).split("\n"), 1):
            if re.match(r"\s*extern\b", line):
                externs.append(f"{f}:{i}: {line.strip()}")
check("no .c declares another file's names (extern): calls go through headers", externs)

# ---- small pieces --------------------------------------------------------
big = []
for h in [f for f in host if f.endswith(".h")]:
    n = sum(1 for _ in open(h))
    if n > MAX_HEADER:
        big.append(f"{h}: {n} lines")
check(f"no header over {MAX_HEADER} lines", big)


def functions(path):
    """(name, first line, lines) of each function defined at file scope."""
    lines = strip(open(path).read()).split("\n")
    out, depth, start, name = [], 0, None, None
    for i, line in enumerate(lines):
        if depth == 0 and start is None:
            m = re.match(r"^[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;]*$", line)
            if m and not line.lstrip().startswith(("#", "typedef", "struct", "enum", "union")) and \
                    m.group(1) not in ("if", "for", "while", "switch", "return", "sizeof"):
                start, name = i, m.group(1)
        opened = line.count("{")
        depth += opened - line.count("}")
        if start is not None and depth == 0 and (opened or "}" in line):
            out.append((name, start + 1, i - start + 1))
            start = None
        elif start is not None and depth == 0 and line.rstrip().endswith(";"):
            start = None  # a prototype
    return out


long_fns = []
for f in [f for f in host if f.endswith(".c")]:
    for name, first, n in functions(f):
        if n > MAX_FUNCTION:
            long_fns.append(f"{f}:{first}: {name}, {n} lines")
check(f"no host function over {MAX_FUNCTION} lines", long_fns)

failed = 0
for name, problems in results:
    if problems is None:
        print(f"SKIP layers: {name}: {BUILD}/ has not every object (make kbench)")
    elif problems:
        failed += 1
        print(f"FAIL layers: {name}")
        for p in problems[:40]:
            print(f"    {p}")
        if len(problems) > 40:
            print(f"    ... and {len(problems) - 40} more")
    else:
        print(f"PASS layers: {name}")
sys.exit(1 if failed else 0)
