# CLI tests of issue 45's faults in sweeps, flags and set-up (sourced by
# tests/cli.sh; helpers there): huge sweeps held or refused, a dry run
# interrupted, flags given twice or misspelt, the dependency check, plots of
# older CSVs.

# kbench built with AddressSanitizer (make test-asan): it reserves terabytes
# of address space, so no ulimit -v, and its resident memory is not kbench's
kb_asan() { grep -qa __asan_init "$KBENCH"; }

# run_limited KIB ARGS...: kbench under ulimit -v KIB (address space); $rc,
# $T/out, $T/err, and $T/rss its peak resident KiB where /usr/bin/time is
# (under ASan: neither)
run_limited() {
    local kib=$1
    shift
    last_args=("$@")
    rm -f "$T/rss"
    if kb_asan; then
        "$KBENCH" "$@" >"$T/out" 2>"$T/err"
    elif [ -x /usr/bin/time ]; then
        (ulimit -v "$kib" && exec /usr/bin/time -f '%M' -o "$T/rss" "$KBENCH" "$@") >"$T/out" 2>"$T/err"
    else
        (ulimit -v "$kib" && exec "$KBENCH" "$@") >"$T/out" 2>"$T/err"
    fi
    rc=$?
}

# peak resident KiB under LIMIT KiB (where measured)
expect_rss_under() {
    [ -s "$T/rss" ] || return 0
    local kib
    kib=$(tail -n 1 "$T/rss")
    [ "$kib" -lt "$1" ] || bad "peak resident ${kib} KiB, want under $1 KiB"
}

# a list of N ones: "1,1,...,1"
ones() { local s; s=$(printf '1,%.0s' $(seq "$1")); echo "${s%,}"; }

# Item 1: every case of a sweep copied its int list (5000 x 4 bytes x a
# million cases: 20 GB, then SIGSEGV on an unchecked malloc). The cases now
# share their axis's list, and a plan that cannot be held is refused before
# it is made.
cli_faults_huge_sweep() {
    local list
    list=$(ones 5000)
    # the reproducer under 1.4 GiB of address space: refused in one line at once
    if kb_asan; then
        t_skip "faults: a million cases of a 5000-long seqlens under ulimit -v (ASan takes no ulimit -v)"
    else
        SECONDS=0
        run_limited 1500000 rope --layout thd --seq 1 --seqlens "$list" --heads 1:125:1 --dim 2:2000:2 \
            --pass all --style all --dtype fp16,bf16 --dry-run
        expect_rc 2
        expect_stderr_lines 1
        expect_err_has "1000000 cases need about" "ulimit -v" "split the sweep"
        [ "$SECONDS" -le 5 ] || bad "took $SECONDS s to refuse"
        done_test "faults: a million cases of a 5000-long seqlens under ulimit -v: refused in one line, no crash"
    fi

    # 50000 cases of it: the cases share the list (copied: 1 GB, a crash here)
    run_limited 1500000 rope --layout thd --seq 1 --seqlens "$list" --heads 1:125:1 --dim 2:100:2 \
        --pass all --style all --dtype fp16,bf16 --dry-run
    expect_rc 0
    [ -s "$T/err" ] && bad "stderr not empty"
    expect_out_has "50000 cases; the largest needs"
    grep -q '^50000  rope .*seqlens=1+1+1.*\.\.\. ' "$T/out" || bad "the last case's line, its long list cut with ..., is missing"
    expect_rss_under 400000
    done_test "faults: 50000 cases of a 5000-long seqlens: the dry run holds one list (peak RSS under 400 MB)"

    # the same from a sweep file (a 20000-long list: 40 KB of text)
    printf '{"sweeps": [{"op": "rope", "layout": "thd", "seq": 1, "seqlens": [%s], "heads": "1:25:1",
        "dim": "2:200:2", "pass": "all", "style": "all", "dtype": ["fp16", "bf16"]}]}\n' "$(ones 20000)" >"$T/long.json"
    run_limited 1500000 sweep "$T/long.json" --dry-run
    expect_rc 0
    expect_out_has "20000 cases; the largest needs"
    expect_rss_under 400000
    done_test "faults: a sweep file of 20000 cases of a 20000-long seqlens: held once (peak RSS under 400 MB)"
}

cli_more+=(cli_faults_huge_sweep)

# interrupt ARGS...: kbench ARGS in the background, SIGINT once its stdout
# has begun; $rc, $T/out, $T/err. A background job of a script starts with
# SIGINT ignored: env --default-signal gives it the default a terminal's
# Ctrl-C meets (coreutils 8.31; without it, as it comes).
interrupt() {
    last_args=("$@")
    rm -f "$T/out" "$T/err"
    local dflt=()
    env --default-signal=INT true 2>/dev/null && dflt=(env --default-signal=INT)
    "${dflt[@]}" "$KBENCH" "$@" >"$T/out" 2>"$T/err" &
    local pid=$! i
    for i in $(seq 400); do
        [ -s "$T/out" ] && break
        sleep 0.025
    done
    kill -INT "$pid" 2>/dev/null
    wait "$pid"
    rc=$?
}

# every line of $T/out whole: it ends with a newline, and each line is one of
# the plan's (PATTERN, an ERE)
expect_whole_lines() {
    [ -s "$T/out" ] || { bad "stdout empty"; return; }
    [ "$(tail -c 1 "$T/out" | od -An -c | tr -d ' ')" = '\n' ] || bad "stdout ends mid-line: '$(tail -c 60 "$T/out")'"
    local n
    n=$(grep -cvE "$1" "$T/out")
    [ "$n" -eq 0 ] || bad "$n lines of stdout are not whole plan lines: $(grep -vE "$1" "$T/out" | head -n 1)"
}

# Item 9: SIGINT during a dry run cut the plan mid-line (stdout's buffer
# went out as it was); under --devices it said the finished rows were in
# results/..., files a dry run never writes. Now the plan stops at a line's
# end with one line saying so, exit 130, and no file is claimed.
cli_faults_dry_run_sigint() {
    printf '{"sweeps": [{"op": "rope", "seq": 16, "batch": 1, "heads": "1:125:1", "dim": "2:1600:2", "pass": "all", "dtype": ["fp16", "bf16"]}]}\n' >"$T/many.json"
    interrupt sweep "$T/many.json" --dry-run
    expect_rc 130
    expect_stderr_lines 1
    expect_err_has "stopped by SIGINT after" "of 400000 cases" "nothing was written"
    expect_whole_lines '^ *[0-9]+  rope +pass=.* device +[0-9.]+ [KMG]?i?B  moves +[0-9.]+ [KMG]?i?B$'
    grep -q 'cases; the largest' "$T/out" && bad "a stopped plan's closing line was printed"
    done_test "faults: SIGINT during a dry run of 400000 cases: whole lines, one line why, exit 130"

    interrupt rope --seq 16 --batch 1 --heads 1:125:1 --dim 2:800:2 --pass all --dtype fp16,bf16 --devices 0,1 --dry-run
    expect_rc 130
    expect_stderr_lines 1
    expect_err_has "stopped by SIGINT after" "nothing was written"
    grep -qF "results/" "$T/err" && bad "a dry run claims result files"
    expect_whole_lines '^gpu [0-9]+ +[0-9]+  rope +pass=.*$'
    done_test "faults: SIGINT during a --devices dry run: no result file claimed, exit 130"
}

cli_more+=(cli_faults_dry_run_sigint)

# Item 12: --timing events,graph said "value too long" (the field holds 8
# bytes). Timing is one value for a run, not a sweep axis: said so, with the
# way to set both side by side.
cli_faults_timing_list() {
    usage_error "faults: --timing events,graph: one value, and how to compare both" rope --timing events,graph --dry-run \
        -- "--timing takes one value, auto, events or graph, not a list" "--timing events, then --timing graph" "kbench compare"
    printf '{"settings": {"timing": "graph,events"}, "sweeps": [{"op": "rope"}]}\n' >"$T/timing.json"
    usage_error "faults: a sweep file's \"timing\": \"graph,events\" is said the same" \
        sweep "$T/timing.json" --dry-run -- "settings: timing takes one value, auto, events or graph, not a list"
    usage_error "faults: --timing EVENTS suggests events" rope --timing EVENTS --dry-run -- "got 'EVENTS' (did you mean events?)"
}

# Item 13: the small ones.
cli_faults_small() {
    usage_error "faults: --seq 2048 --seq 4096 is refused (it kept 4096)" rope --seq 2048 --seq 4096 --dry-run \
        -- "--seq given twice ('2048', then '4096')" "--seq 2048,4096"
    usage_error "faults: a setting given twice with two values is refused" rope --seed 1 --seed 2 --dry-run \
        -- "--seed given twice ('1', then '2')"
    usage_error "faults: sweep --set NAME twice is refused" sweep configs/ci.json --set dtype=fp16 --set dtype=bf16 --dry-run \
        -- "--set dtype given twice" "--set dtype=fp16,bf16"
    run rope --seq 2048 --seq 2048 --quiet --quiet --dry-run
    expect_rc 0
    done_test "faults: the same value twice is harmless and taken"
    usage_error "faults: --set dtpye suggests dtype" sweep configs/ci.json --set dtpye=fp16 --dry-run \
        -- "'dtpye'" "did you mean 'dtype'?"
    usage_error "faults: --dtype FP16 suggests fp16" rope --dtype FP16 --dry-run -- "unknown value 'FP16' (did you mean fp16?"
    usage_error "faults: --devices 999 is past the 64 GPUs kbench drives" rope --devices 999 --dry-run \
        -- "GPU 999 is past the last kbench drives (indices 0 to 63)"
    usage_error "faults: --out-dir '' is refused (it meant /)" rope --out-dir "" --dry-run -- "an empty path"
    usage_error "faults: help rope extra is refused" help rope extra -- "one command at a time" "'extra'"
    run
    expect_rc 2
    local n
    n=$(nlines "$T/err")
    [ "$n" -le 4 ] || bad "$n lines of usage on stderr, want a few"
    expect_err_has "usage: kbench COMMAND" "kbench --help"
    [ -s "$T/out" ] && bad "stdout not empty"
    done_test "faults: kbench without a command: a short usage pointing at --help, exit 2"
    if [ -r /proc/self/status ]; then
        usage_error "faults: sweep /proc/self/status is read to its end (it said: empty file)" sweep /proc/self/status \
            -- "/proc/self/status:1:1: JSON syntax error near 'Name:"
    fi
    printf '{"sweeps": [{"op": 5}]}\n' >"$T/op5.json"
    usage_error "faults: \"op\": 5 says op is a string naming an op (it said: missing op)" sweep "$T/op5.json" \
        -- "\"op\" must be a string naming an op (rope, layernorm" "got a number"
}

cli_more+=(cli_faults_timing_list cli_faults_small)

# fake_path DIR NAME...: DIR holds a link to every command of $PATH but the
# NAMEs (and the CUDA toolkit's), and an apt-get that fails as without a
# package registry (exit 100)
fake_path() {
    local dir=$1 d n
    shift
    mkdir -p "$dir"
    local IFS=:
    local dirs=($PATH)
    unset IFS
    for ((n = ${#dirs[@]} - 1; n >= 0; n--)); do # the first of PATH wins
        d=${dirs[n]}
        [ -d "$d" ] && ln -sf "$d"/* "$dir"/ 2>/dev/null
    done
    for n in "$@"; do rm -f "$dir/$n"; done
    rm -f "$dir/apt-get"
    printf '#!/bin/sh\necho "E: Unable to locate package $*" >&2\nexit 100\n' >"$dir/apt-get"
    chmod +x "$dir/apt-get"
}

# Item 14: make test on a node without a package registry failed before it
# tested anything (apt-get could not install gnuplot-nox). Now what only some
# tests need (gnuplot: the plot tests; python3: layers.py) may stay missing:
# one line says what is skipped, exit 0; under CI=true it is exit 1.
cli_faults_deps() {
    local fp=$T/fakepath
    fake_path "$fp" gnuplot
    if PATH=$fp command -v gnuplot >/dev/null 2>&1; then
        t_skip "faults: deps.sh without gnuplot (it cannot be hidden from PATH here)"
        return
    fi
    last_args=(scripts/deps.sh build test --optional plot)
    (unset CI; PATH=$fp scripts/deps.sh build test --optional plot) >"$T/out" 2>"$T/err"
    rc=$?
    expect_rc 0
    expect_err_has "deps: skipped: " "gnuplot (the plot tests" "count as SKIP"
    [ "$(grep -c 'skipped' "$T/err")" -eq 1 ] || bad "want one 'skipped' line"
    done_test "faults: deps.sh as make test calls it, gnuplot not installable: one skipped line, exit 0"

    (PATH=$fp CI=true scripts/deps.sh build test --optional plot) >"$T/out" 2>"$T/err"
    rc=$?
    expect_rc 1
    expect_err_has "gnuplot-nox" # still missing after apt-get (root), or missing (not root)
    done_test "faults: deps.sh under CI=true, gnuplot not installable: exit 1"

    (unset CI; PATH=$fp scripts/deps.sh build plot) >"$T/out" 2>"$T/err"
    rc=$?
    expect_rc 1
    done_test "faults: deps.sh for make run (plot asked for, not optional), gnuplot not installable: exit 1"

    grep -q '^test:' Makefile && [ "$(sed -n '/^test:/,/^$/p' Makefile | grep -c 'deps.sh build test --optional plot')" -eq 1 ] ||
        bad "make test does not ask for plot as optional"
    done_test "faults: make test asks deps.sh for plot as optional"
}

cli_more+=(cli_faults_deps)

# Item 15: without a GPU kbench said "no usable CUDA driver (not installed,
# or older than ...)": now the cause by CUDA's codes, "no NVIDIA GPU or
# driver found: ..." (tests/test_device.c holds each cause).
cli_faults_no_gpu() {
    run device
    if [ "$rc" -eq 0 ]; then
        t_skip "faults: kbench device without a GPU names the cause (a GPU is here)"
        return
    fi
    expect_rc 3
    expect_stderr_lines 1
    expect_err_has "kbench: no NVIDIA GPU or driver found: "
    done_test "faults: kbench device without a GPU: 'no NVIDIA GPU or driver found: ...', exit 3"
    grep -qF "kbench: no NVIDIA GPU or driver found: " README.md || bad "README does not show the line"
    done_test "faults: README's set-up says what make run prints without a GPU"
}

cli_more+=(cli_faults_no_gpu)

# drop_column NAME IN OUT: the CSV IN without its column NAME (no quoted commas)
drop_column() {
    awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i }
        { o = ""; k = 0; for (i = 1; i <= NF; i++) if (i != c) o = o (k++ ? "," : "") $i; print o }' "$2" >"$3"
}

# Item 16: scripts/plot.sh on a CSV of an older kbench, one without
# cublas_shape_tflops, exited 1 ("gnuplot failed for X-mlp.png": the bar
# chart's size-matched mark read a file of '?' alone). A missing optional
# column leaves its line out; the chart is drawn.
cli_faults_plot_old_csv() {
    if ! command -v gnuplot >/dev/null 2>&1; then
        t_skip "faults: plot.sh on a CSV without cublas_shape_tflops (gnuplot not installed)"
        return
    fi
    # a current CSV's columns: one MLP case (a bar chart) and a LayerNorm one
    cat >"$T/new.csv" <<'CSV'
op,pass,impl,dtype,layout,rows,cols,tokens,hidden,inter,median_ms,gbps,pct_of_copy,copy_gbps,flops,bytes,tflops,gemm_tflops,cublas_shape_tflops,pct_of_cublas_shape
mlp,,fused,bf16,,,,2048,1024,11008,0.2,300,10,2400,126000000000,60000000,630,700,600,105
mlp,,cublas,bf16,,,,2048,1024,11008,0.25,240,8,2400,126000000000,60000000,504,700,600,84
layernorm,fwd,opt,fp16,,4096,1024,,,,0.01,2000,80,2500,2000000,1000000,2,,,
layernorm,fwd,naive,fp16,,4096,1024,,,,0.1,200,8,2500,2000000,1000000,0.2,,,
CSV
    drop_column pct_of_cublas_shape "$T/new.csv" "$T/t.csv"
    drop_column cublas_shape_tflops "$T/t.csv" "$T/old.csv"
    head -n 1 "$T/old.csv" | grep -q cublas_shape && bad "the column was not dropped"
    last_args=(scripts/plot.sh "$T/old.csv" "$T/oldpng")
    scripts/plot.sh "$T/old.csv" "$T/oldpng" >"$T/out" 2>"$T/err"
    rc=$?
    expect_rc 0
    expect_stderr_lines 0
    [ -s "$T/oldpng/old-mlp.png" ] || bad "no MLP chart"
    [ -s "$T/oldpng/old-layernorm-fwd.png" ] || bad "no LayerNorm chart"
    done_test "faults: plot.sh on a CSV without cublas_shape_tflops: every chart drawn, exit 0"
}

cli_more+=(cli_faults_plot_old_csv)
