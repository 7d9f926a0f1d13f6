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

    # the roofline: its roofs where the CSV puts them (the largest copy_gbps, each
    # dtype's gemm_tflops), one point per row, the best row of each op labelled
    plot_mlp_fixture "$T/roof.csv"
    rm -rf "$T/roofdata"
    KBENCH_PLOT_DATA=$T/roofdata scripts/plot.sh "$T/roof.csv" "$T/png" >"$T/out" 2>"$T/err"
    rc=$?
    expect_rc 0
    expect_stderr_lines 0
    [ -s "$T/png/roof-roofline.png" ] || bad "no roofline PNG"
    out=$(sort "$T/roofdata/roofs.txt" | tr '\n' ' ')
    [ "$out" = "copy 2500 gemm bf16 700 gemm fp16 650 " ] || bad "roofs: '$out', want copy 2500, gemm bf16 700 and fp16 650"
    out=$(cat "$T"/roofdata/roof_s*.dat | wc -l)
    [ "$out" -eq 9 ] || bad "$out roofline points, want 9 (one per row)"
    # layernorm opt: 2 flops / 1 byte at 2 TFLOP/s under a roof of 2 x 2500 GB/s = 5: 40%
    grep -q '^2 2 "40%"$' "$T/roofdata/roof_labels.dat" || bad "layernorm's best label: $(cat "$T/roofdata/roof_labels.dat")"
    # the MLP's best: fused fp16, 600 TFLOP/s under the fp16 GEMM roof of 650, 92%
    # (fused bf16: 630 under 700, 90%)
    grep -q '^2100 600 "92%"$' "$T/roofdata/roof_labels.dat" || bad "mlp's best label: $(cat "$T/roofdata/roof_labels.dat")"
    done_test "plot.sh: the roofline's roofs are the CSV's copy and GEMM ceilings, a point per row"

    # an op with a GEMM ceiling is drawn in TFLOP/s with its ceilings; the norms in GB/s
    g=$(grep -l "mlp" "$T"/roofdata/g*.args | head -n 1)
    grep -q "ylab='TFLOP/s'" "$g" || bad "the MLP's plot is not in TFLOP/s: $(cat "$g")"
    grep -q "gm1=700" "$g" && grep -q "gm2=650" "$g" || bad "the MLP's plot lacks its GEMM ceilings: $(cat "$g")"
    grep -q "clabel='cuBLAS on these shapes'" "$g" || bad "the MLP's plot lacks cuBLAS on its shapes: $(cat "$g")"
    g=$(grep -l "layernorm" "$T"/roofdata/g*.args | head -n 1)
    grep -q "ylab='GB/s'" "$g" && grep -q "ngm=0" "$g" || bad "the LayerNorm plot is not in GB/s: $(cat "$g")"
    done_test "plot.sh: the MLP (a GEMM ceiling) in TFLOP/s, the norms in GB/s"

    # fused against the better cuBLAS path: bf16 min(0.25, 0.24) / 0.2 = 1.2, fp16 0.26 / 0.21
    [ -s "$T/png/roof-mlp-fused-vs-cublas.png" ] || bad "no fused-vs-cuBLAS figure"
    out=$(cat "$T"/roofdata/mlpr_s*.dat | sort | tr '\n' ' ')
    [ "$out" = "2048 1.2 ? 2048 1.2381 ? " ] || bad "fused / best cuBLAS: '$out', want 1.2 (bf16) and 1.2381 (fp16)"
    grep -q "gm2=1.15" "$T/roofdata/mlpr.args" || bad "no 1.15 target line"
    done_test "plot.sh: the fused MLP against the better cuBLAS path, a line per width and dtype"

    # more than 8 series on one chart: one chart per dtype
    plot_many_fixture "$T/many.csv"
    scripts/plot.sh "$T/many.csv" "$T/png" >"$T/out" 2>"$T/err"
    rc=$?
    expect_rc 0
    for dt in fp32 fp16 bf16; do
        [ -s "$T/png/many-rope-fwd-$dt.png" ] || bad "no chart for $dt: $(cat "$T/out")"
    done
    [ ! -e "$T/png/many-rope-fwd.png" ] || bad "the 12 series were also drawn on one chart"
    done_test "plot.sh: more than 8 series split into one chart per dtype"
}

# layernorm fwd (GB/s) and the MLP (TFLOP/s, with GEMM ceilings) in one CSV
plot_mlp_fixture() {
    local f=$1
    echo "op,pass,impl,dtype,layout,rows,cols,tokens,hidden,inter,median_ms,gbps,pct_of_copy,copy_gbps,flops,bytes,tflops,gemm_tflops,cublas_shape_tflops" >"$f"
    cat >>"$f" <<'CSV'
layernorm,fwd,opt,fp16,,4096,1024,,,,0.01,2000,80,2500,2000000,1000000,2,,
layernorm,fwd,naive,fp16,,4096,1024,,,,0.1,200,8,2500,2000000,1000000,0.2,,
layernorm,fwd,opt,fp16,,4096,2048,,,,0.02,1900,80,2400,4000000,2000000,1.9,,
layernorm,fwd,naive,fp16,,4096,2048,,,,0.2,190,8,2400,4000000,2000000,0.19,,
mlp,,fused,bf16,,,,2048,1024,11008,0.2,300,10,2400,126000000000,60000000,630,700,600
mlp,,cublas,bf16,,,,2048,1024,11008,0.25,240,8,2400,126000000000,60000000,504,700,600
mlp,,cublas_cat,bf16,,,,2048,1024,11008,0.24,250,8,2400,126000000000,60000000,525,700,600
mlp,,fused,fp16,,,,2048,1024,11008,0.21,285,10,2400,126000000000,60000000,600,650,590
mlp,,cublas,fp16,,,,2048,1024,11008,0.26,230,8,2400,126000000000,60000000,485,650,590
CSV
}

# rope fwd: 4 impls x 3 dtypes over seq = 12 series
plot_many_fixture() {
    local f=$1 i d s
    echo "op,pass,impl,dtype,layout,seq,median_ms,gbps,pct_of_copy,copy_gbps" >"$f"
    for i in naive opt a b; do
        for d in fp32 fp16 bf16; do
            for s in 512 1024; do echo "rope,fwd,$i,$d,sbhd,$s,0.1,1000,50,2000" >>"$f"; done
        done
    done
}
