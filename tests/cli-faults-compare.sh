# CLI tests of kbench compare and kbench merge against the faults of issue 45
# (bad input, failed writes, outputs over inputs), sourced by tests/cli.sh.
# Sized for the ASan build on a slow 2-core machine.

# fc_rows FILE N MEDIAN [same|distinct|wide:P]: a result file of N rows:
# every row the same case (same), each its own (distinct), or each with P
# parameters (wide:P)
fc_rows() {
    python3 - "$@" <<'PY'
import sys
path, n, ms, kind = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
def params(i):
    if kind == "same": return '"seq": 1'
    if kind == "distinct": return '"seq": %d' % i
    p = int(kind.split(":")[1])
    return ", ".join('"p%d": %d' % (j, i if j == 0 else j) for j in range(p))
rows = ['{"op": "rope", "impl": "opt", "params": {%s}, "median_ms": %g}' % (params(i), ms) for i in range(n)]
with open(path, "w") as f:
    f.write('{"kbench": {"version": "0.1.0"}, "device": {"name": "GPU"}, "results": [\n' + ",\n".join(rows) + "\n]}\n")
PY
}

# item 4: rows that share one key were matched by a scan of the rows of that
# key already used (100k rows: 12.8 s, 200k: 95 s); the CSV's columns by a
# scan of the columns so far, per parameter of every row (10 rows of 20000
# parameters: 33 s)
cli_fc_compare_fast() {
    local d=$T/fc-fast t0
    mkdir -p "$d"
    fc_rows "$d/a.json" 100000 0.1 same
    fc_rows "$d/b.json" 100000 0.2 same
    t0=$SECONDS
    last_args=(compare "$d/a.json" "$d/b.json" --quiet)
    timeout 120 "$KBENCH" compare "$d/a.json" "$d/b.json" --quiet >"$T/out" 2>"$T/err"
    rc=$?
    expect_rc 4
    summary_is "compare: 100000 cases, 0 faster, 100000 slower, 0 same, 0 only in base, 0 only in new; by rule: 100000 threshold, 0 mann-whitney"
    [ $((SECONDS - t0)) -lt 10 ] || bad "took $((SECONDS - t0)) s, want under 10 (about 2 s under ASan)"
    done_test "compare: 100000 rows of one case match in seconds"

    fc_rows "$d/wa.json" 10 0.1 wide:20000
    fc_rows "$d/wb.json" 10 0.1 wide:20000
    t0=$SECONDS
    last_args=(compare "$d/wa.json" "$d/wb.json" --csv "$d/w.csv")
    timeout 120 "$KBENCH" compare "$d/wa.json" "$d/wb.json" --csv "$d/w.csv" >"$T/out" 2>"$T/err"
    rc=$?
    expect_rc 0
    [ $((SECONDS - t0)) -lt 10 ] || bad "took $((SECONDS - t0)) s, want under 10 (about 2 s under ASan)"
    [ "$(wc -l <"$d/w.csv")" = 11 ] || bad "the CSV has $(wc -l <"$d/w.csv") lines, want 11"
    head -n 1 "$d/w.csv" | grep -q '^op,impl,p0,p1,p2,.*,p19999,base_median_ms,' || bad "the CSV's header: $(head -c 100 "$d/w.csv")"
    sed -n 2p "$d/w.csv" | grep -q '^rope,opt,0,1,2,3,' || bad "the CSV's first row: $(sed -n 2p "$d/w.csv" | head -c 100)"
    done_test "compare --csv: 10 rows of 20000 parameters in seconds"
}

# item 6: --csv was opened in place: a write that failed (a full disk) left
# the old CSV gone and half a new one (cut at 1024 bytes here). Written whole
# now, as merge writes: a temporary renamed over it.
cli_fc_csv_atomic() {
    local d=$T/fc-atomic c=tests/data/compare
    mkdir -p "$d"
    printf 'the old CSV\n' >"$d/cmp.csv"
    last_args=(compare "$c/base.json" "$c/new.json" --csv "$d/cmp.csv" "(ulimit -f 1)")
    (trap '' XFSZ; ulimit -f 1; exec "$KBENCH" compare "$c/base.json" "$c/new.json" --csv "$d/cmp.csv") >/dev/null 2>"$T/err"
    rc=$?
    expect_rc 2
    expect_stderr_lines 1
    expect_err_has "kbench compare: --csv: cannot write $d/cmp.csv" "File too large"
    [ "$(cat "$d/cmp.csv")" = "the old CSV" ] || bad "the old CSV was replaced by $(wc -c <"$d/cmp.csv") bytes"
    [ -z "$(ls "$d" | grep -v '^cmp.csv$')" ] || bad "left behind: $(ls "$d" | grep -v '^cmp.csv$')"
    done_test "compare --csv that cannot be written whole leaves the old CSV and no temporary"

    run compare "$c/base.json" "$c/new.json" --csv "$d/cmp.csv"
    expect_rc 4
    [ "$(head -c 8 "$d/cmp.csv")" = "op,impl," ] && [ "$(wc -l <"$d/cmp.csv")" = 8 ] || bad "the CSV: $(head -c 100 "$d/cmp.csv")"
    [ -z "$(ls "$d" | grep -v '^cmp.csv$')" ] || bad "left behind: $(ls "$d" | grep -v '^cmp.csv$')"
    done_test "compare --csv replaces the old CSV whole"
}

# item 8: an output over an input: `compare a.json new.json --csv a.json`
# replaced a.json; merge -o or --csv over a part (or a part's CSV, which
# --csv reads) overwrote it. Refused now before anything is written, one
# line, exit 2; paths compare as files (./a.json is a.json, a link its target).
cli_fc_output_over_input() {
    local d=$T/fc-over c=tests/data/compare
    mkdir -p "$d"
    cp "$c/base.json" "$d/a.json"
    cp "$c/new.json" "$d/b.json"
    ln -sf b.json "$d/link.json"
    usage_error "compare --csv over the base file is refused" compare "$d/a.json" "$d/b.json" --csv "$d/./a.json" -- \
        "--csv $d/./a.json is the base file $d/a.json: it would be overwritten"
    cmp -s "$d/a.json" "$c/base.json" || bad "a.json was changed"
    done_test "compare --csv over the base file leaves it as it was"
    usage_error "compare --csv over a link to the new file is refused" compare "$d/a.json" "$d/b.json" --csv "$d/link.json" -- \
        "--csv $d/link.json is the new file $d/b.json"
    cmp -s "$d/b.json" "$c/new.json" || bad "b.json was changed"
    done_test "compare --csv over a link to the new file leaves it as it was"
    cp "$c/base.json" "$d/a.png"
    usage_error "compare --plot over an input is refused" compare "$d/a.png" "$d/b.json" --plot "$d/a.png" -- \
        "--plot $d/a.png is the base file"
    usage_error "compare --csv and --plot on one file are refused" compare "$d/a.json" "$d/b.json" --csv "$d/x.png" --plot "$d/x.png" -- \
        "--csv and --plot are the same file"
    [ -e "$d/x.png" ] && bad "x.png was written"
    done_test "compare --csv and --plot on one file write nothing"

    merge_part "$d/p0.json" 00000000000000aa 0/2 H100 3 0
    merge_part "$d/p1.json" 00000000000000aa 1/2 H100 2 1
    cp "$d/p0.json" "$d/p0.json.orig"
    cp "$d/p0.csv" "$d/p0.csv.orig"
    cp "$d/p1.csv" "$d/p1.csv.orig"
    usage_error "merge -o over a part is refused" merge -o "$d/p0.json" "$d/p0.json" "$d/p1.json" -- \
        "-o $d/p0.json is the part $d/p0.json: it would be overwritten"
    usage_error "merge --csv over a part's CSV is refused" merge -o "$d/all.json" --csv "$d/./p0.csv" "$d/p0.json" "$d/p1.json" -- \
        "--csv $d/./p0.csv is $d/p0.csv, the CSV of the part $d/p0.json"
    usage_error "merge -o over a part's CSV (with --csv) is refused" merge -o "$d/p1.csv" --csv "$d/all.csv" "$d/p0.json" "$d/p1.json" -- \
        "-o $d/p1.csv is $d/p1.csv, the CSV of the part $d/p1.json"
    usage_error "merge --csv over a part is refused" merge -o "$d/all.json" --csv "$d/p1.json" "$d/p0.json" "$d/p1.json" -- \
        "--csv $d/p1.json is the part $d/p1.json"
    usage_error "merge -o and --csv on one file are refused" merge -o "$d/all.json" --csv "$d/all.json" "$d/p0.json" "$d/p1.json" -- \
        "-o and --csv are the same file"
    for f in p0.json p0.csv p1.csv; do cmp -s "$d/$f" "$d/$f.orig" || bad "$f was changed"; done
    [ -e "$d/all.json" ] || [ -e "$d/all.csv" ] && bad "a merge was written"
    done_test "merge over its own parts writes nothing and leaves them"
}

# item 10: --plot to a path it cannot write was found after the comparison:
# the table, gnuplot's 8 lines, exit 1 (4 with a regression). Checked first
# now, as the outputs of a run are: one line, exit 2, nothing on stdout.
cli_fc_plot_unwritable() {
    local d=$T/fc-plot c=tests/data/compare
    mkdir -p "$d/dir.png"
    : >"$d/file"
    usage_error "compare --plot to a directory exits 2 before comparing" compare "$c/base.json" "$c/new.json" --plot "$d/dir.png" -- \
        "kbench compare: --plot $d/dir.png is a directory"
    [ -s "$T/out" ] && bad "stdout: $(head -c 200 "$T/out")"
    done_test "compare --plot to a directory prints nothing on stdout"
    usage_error "compare --plot under a file exits 2 before comparing" compare "$c/base.json" "$c/base.json" --plot "$d/file/x.png" -- \
        "cannot write --plot $d/file/x.png"
    [ -s "$T/out" ] && bad "stdout: $(head -c 200 "$T/out")"
    done_test "compare --plot under a file prints nothing on stdout"
}

# item 11: a result file's strings reached the terminal raw: a device name
# with a newline or an ESC in compare's and merge's notes on stderr (and
# compare's head lines and notes on stdout). Escaped now (\n, \x1b).
cli_fc_escape_controls() {
    local d=$T/fc-esc c=tests/data/compare
    mkdir -p "$d"
    python3 - "$c/base.json" "$d/evil.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["device"]["name"] = "Evil\x1b[31mGPU\nsecond line"
d["kbench"]["version"] = "9\x07"
d["kbench"]["git_commit"] = "g\x1b]0;title\x07"
d["results"][1]["error"] = "bad\x1b[2J"
json.dump(d, open(sys.argv[2], "w"))
PY
    run compare "$c/base.json" "$d/evil.json"
    expect_rc 4
    expect_stderr_lines 2
    expect_err_has 'note: different devices: base NVIDIA H100 80GB HBM3, new Evil\x1b[31mGPU\nsecond line' \
        'note: different kbench versions: base 0.1.0, new 9\x07'
    expect_out_has 'kbench 9\x07 (g\x1b]0;title\x07), Evil\x1b[31mGPU\nsecond line' 'new: bad\x1b[2J'
    LC_ALL=C grep -q '[[:cntrl:]]' <(tr -d '\n' <"$T/err") && bad "a raw control character on stderr"
    LC_ALL=C grep -q '[[:cntrl:]]' <(tr -d '\n' <"$T/out") && bad "a raw control character on stdout"
    done_test "compare escapes control characters of a file's device, version and error"

    merge_part "$d/p0.json" 00000000000000aa 0/2 H100 3 0
    merge_part "$d/p1.json" 00000000000000aa 1/2 'Evil\u001b[31m\nGPU' 2 1
    run merge -o "$d/all.json" "$d/p0.json" "$d/p1.json"
    expect_rc 0
    expect_stderr_lines 1
    expect_err_has "kbench merge: note: $d/p1.json ran on Evil\\x1b[31m\\nGPU with kbench"
    LC_ALL=C grep -q '[[:cntrl:]]' <(tr -d '\n' <"$T/err") && bad "a raw control character on stderr"
    done_test "merge escapes control characters of a part's device"
}

# item 13 (its duplicate keys): a result file with a key twice in one object
# was read by the first (cJSON keeps both), where a sweep file with one is
# refused. Refused now in compare's files and merge's parts alike; the same
# key in two rows (two objects) is what every file has.
cli_fc_duplicate_keys() {
    local d=$T/fc-dup c=tests/data/compare
    mkdir -p "$d"
    sed '0,/"median_ms":/s//"median_ms": 5, "median_ms":/' "$c/base.json" >"$d/row.json"
    sed '0,/"seq": 4096/s//"seq": 4096, "seq": 1/' "$c/base.json" >"$d/params.json"
    usage_error "compare refuses a key twice in a row" compare "$c/base.json" "$d/row.json" -- \
        "kbench compare: $d/row.json: duplicate key 'median_ms' in results[0]"
    usage_error "compare refuses a key twice in a row's params" compare "$d/params.json" "$c/base.json" -- \
        "kbench compare: $d/params.json: duplicate key 'seq' in results[0].params"

    merge_part "$d/p0.json" 00000000000000aa 0/2 H100 3 0
    merge_part "$d/p1.json" 00000000000000aa 1/2 H100 2 1
    sed -i '0,/"sweep_id"/s//"sweep_id": "00000000000000bb", "sweep_id"/' "$d/p1.json"
    usage_error "merge refuses a part with a key twice" merge -o "$d/all.json" "$d/p0.json" "$d/p1.json" -- \
        "kbench merge: $d/p1.json: duplicate key 'sweep_id' in kbench"
    [ -e "$d/all.json" ] && bad "a merge was written"
    done_test "merge writes nothing from a part with a key twice"
}

cli_more+=(cli_fc_compare_fast cli_fc_csv_atomic cli_fc_output_over_input cli_fc_plot_unwritable cli_fc_escape_controls
    cli_fc_duplicate_keys)
