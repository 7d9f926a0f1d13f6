# Tests of scripts/plot.sh, sourced by tests/run.sh after tests/cli.sh (its
# helpers: bad, done_test, t_skip, $T).

# a kbench-shaped CSV: layernorm fwd, impls opt and naive, fp16 and fp32,
# cols 1024 and 2048; each dtype's cases have their own copy ceiling
plot_fixture() {
    local f=$1
    echo "op,pass,impl,dtype,layout,rows,cols,eps,affine,median_ms,gbps,pct_of_copy,copy_gbps" >"$f"
    cat >>"$f" <<'CSV'
layernorm,fwd,opt,fp16,,4096,1024,1e-05,on,0.01,900,90,1000
layernorm,fwd,naive,fp16,,4096,1024,1e-05,on,0.1,90,9,1000
layernorm,fwd,opt,fp16,,4096,2048,1e-05,on,0.02,1800,90,2000
layernorm,fwd,naive,fp16,,4096,2048,1e-05,on,0.2,180,9,2000
layernorm,fwd,opt,fp32,,4096,1024,1e-05,on,0.02,1200,80,1500
layernorm,fwd,naive,fp32,,4096,1024,1e-05,on,0.2,120,8,1500
layernorm,fwd,opt,fp32,,4096,2048,1e-05,on,0.04,2000,80,2500
layernorm,fwd,naive,fp32,,4096,2048,1e-05,on,0.4,200,8,2500
CSV
}

plot_tests() {
    local out nser csv=$T/plot.csv
    last_args=(scripts/plot.sh)
    echo "a,b" >"$T/notkb.csv"
    scripts/plot.sh "$T/notkb.csv" "$T" >"$T/out" 2>"$T/err"
    rc=$?
    expect_rc 2
    expect_stderr_lines 1
    expect_err_has "not a kbench CSV"
    done_test "plot.sh: a CSV that is not kbench's exits 2 with one line"

    if ! command -v gnuplot >/dev/null 2>&1; then
        t_skip "plot.sh: one copy ceiling per dtype, PNG written (gnuplot not installed)"
        return
    fi
    plot_fixture "$csv"
    rm -rf "$T/plotdata"
    KBENCH_PLOT_DATA=$T/plotdata scripts/plot.sh "$csv" "$T/png" >"$T/out" 2>"$T/err"
    rc=$?
    expect_rc 0
    [ -s "$T/png/plot-layernorm-fwd.png" ] || bad "no PNG at $T/png/plot-layernorm-fwd.png"
    grep -qF "$T/png/plot-layernorm-fwd.png" "$T/out" || bad "the PNG's path is not printed"
    # one ceiling per dtype, never the mean of fp16's and fp32's
    out=$(cat "$T"/plotdata/g1_copy*.dat 2>/dev/null | sort | tr '\n' ' ')
    [ "$out" = "1024 1000 1024 1500 2048 2000 2048 2500 " ] || bad "copy ceilings: '$out', want 1000/2000 (fp16) and 1500/2500 (fp32)"
    nser=$(ls "$T"/plotdata/g1_s*.dat 2>/dev/null | wc -l)
    [ "$nser" -eq 4 ] || bad "$nser series, want 4 (opt and naive x fp16 and fp32)"
    done_test "plot.sh: one copy ceiling per dtype, PNG written"
}
