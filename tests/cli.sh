# CLI tests against $KBENCH, sourced by tests/run.sh (which provides
# t_pass, t_fail, t_skip and the scratch directory $T).
#
# Each cli_* function is one test: it runs kbench, collects what is wrong
# with `bad`, and reports once at its end with `done_test`.

# ---- helpers -------------------------------------------------------------

# kb ARGS...: run kbench; $rc, $T/out, $T/err
kb() {
    "$KBENCH" "$@" >"$T/out" 2>"$T/err"
    rc=$?
}

problems=()
bad() { problems+=("$*"); }

# a check the test could not make (python3 missing): the test is SKIP, not
# PASS, unless another check failed
skipped_check=""
# have_python3: 0 if python3 runs the JSON checks, else 1 with the test marked SKIP
have_python3() {
    command -v python3 >/dev/null 2>&1 && return 0
    skipped_check="python3 not installed: its JSON checks not made"
    return 1
}

done_test() { # NAME
    if [ ${#problems[@]} -eq 0 ] && [ -n "$skipped_check" ]; then
        t_skip "cli: $1 ($skipped_check)"
    elif [ ${#problems[@]} -eq 0 ]; then
        t_pass "cli: $1"
    else
        local p
        t_fail "cli: $1"
        for p in "${problems[@]}"; do echo "      $p"; done
        echo "      command: kbench ${last_args[*]}"
        echo "      stderr: $(head -c 600 "$T/err")"
    fi
    problems=()
    skipped_check=""
}

last_args=()
run() { last_args=("$@"); kb "$@"; }

nlines() { grep -c '' "$1"; }

expect_rc() { [ "$rc" -eq "$1" ] || bad "exit $rc, want $1"; }
expect_stderr_lines() { local n; n=$(nlines "$T/err"); [ "$n" -eq "$1" ] || bad "$n lines on stderr, want $1"; }
expect_err_has() { local s; for s in "$@"; do grep -qF -- "$s" "$T/err" || bad "stderr lacks: $s"; done; }
expect_out_has() { local s; for s in "$@"; do grep -qF -- "$s" "$T/out" || bad "stdout lacks: $s"; done; }

# usage_error NAME ARGS... -- TEXT...: exit 2, one line on stderr containing each TEXT
usage_error() {
    local name=$1; shift
    local args=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
    shift
    run "${args[@]}"
    expect_rc 2
    expect_stderr_lines 1
    expect_err_has "$@"
    done_test "$name"
}

# ---- help and listing ----------------------------------------------------

cli_help() {
    run --help
    expect_rc 0
    expect_out_has "usage: kbench" "rope" "sweep" "check" "list" "device"
    [ -s "$T/err" ] && bad "stderr not empty"
    done_test "kbench --help exits 0"

    run help rope
    expect_rc 0
    expect_out_has "usage: kbench rope" "--seq" "--rotary-dim" "naive" "opt"
    done_test "kbench help rope exits 0"

    run rope --help
    expect_rc 0
    expect_out_has "usage: kbench rope" "--layout {sbhd,bshd,thd}"
    done_test "kbench rope --help exits 0"

    run
    expect_rc 2
    expect_err_has "usage: kbench"
    done_test "kbench without a command exits 2 with the usage on stderr"

    local v
    v=$(sed -n 's/^#define KB_VERSION "\(.*\)"/\1/p' cli/core/errors.h)
    run --version
    expect_rc 0
    [ "$(cat "$T/out")" = "kbench $v" ] || bad "stdout '$(cat "$T/out")', want 'kbench $v'"
    done_test "kbench --version prints the version"
}

cli_list() {
    run list
    expect_rc 0
    expect_out_has "rope:" "implementations:" "naive" "opt"
    local p
    for p in pass dtype layout style seq batch heads dim rotary_dim base seqlens; do
        grep -qE "^ +$p( |$)" "$T/out" || bad "parameter $p not listed"
    done
    expect_out_has "{fwd,bwd}" "{fp32,fp16,bf16}" "{sbhd,bshd,thd}" "{neox,gptj}"
    expect_out_has "[2048, 1..1048576]" # seq: default and bounds
    done_test "kbench list shows rope and its parameters"

    run list rope
    expect_rc 0
    expect_out_has "rope:"
    done_test "kbench list rope exits 0"

    usage_error "kbench list nope exits 2" list nope -- "unknown op 'nope'"
}

# ---- usage errors: exit 2, one line naming the problem -------------------

cli_usage_errors() {
    usage_error "unknown command exits 2" frobnicate -- "unknown command 'frobnicate'"
    usage_error "misspelt command suggests the op" rop -- "unknown command 'rop'" "did you mean 'rope'"
    usage_error "unknown flag --sq suggests --seq" rope --sq 16 -- "unknown option '--sq'" "did you mean --seq"
    usage_error "--timing takes events or graph" rope --timing cuda --dry-run -- "--timing: expected auto, events or graph, got 'cuda'"
    usage_error "--throttle-threshold is a share in [0, 1]" rope --throttle-threshold 75 --dry-run -- "throttle_threshold = 75 is out of bounds [0, 1]"
    usage_error "selftest takes no argument" selftest --seq 4 -- "unexpected argument '--seq'"
    usage_error "unknown flag --rotary_dim suggests --rotary-dim" rope --rotary_dim 16 -- "did you mean --rotary-dim"
    usage_error "unknown flag without a near name" rope --frobnicate -- "unknown option '--frobnicate'"
    usage_error "sweep --dry-rn suggests --dry-run" sweep --dry-rn -- "did you mean --dry-run"
    usage_error "flag without its value exits 2" rope --seq -- "'--seq' needs a value"
    usage_error "a boolean flag given a value exits 2" rope --hot=1 -- "'--hot' takes no value"
    usage_error "positional argument to an op exits 2" rope 16 -- "unexpected argument '16'"
    usage_error "out-of-bounds --seq 0 exits 2" rope --seq 0 -- "seq = 0 is out of bounds [1, 1048576]"
    usage_error "out-of-bounds --dim 9000 exits 2" rope --dim 9000 -- "dim = 9000 is out of bounds"
    usage_error "out-of-bounds in a range exits 2" rope --seq 1024:4194304:x2 -- "out of bounds"
    usage_error "non-number --batch exits 2" rope --batch many -- "batch: expected a decimal number, got 'many'"
    usage_error "hexadecimal --seq exits 2" rope --seq 0x10 -- "seq: expected a decimal number, got '0x10'"
    usage_error "hexadecimal --seed exits 2" rope --seed 0x1f -- "--seed: expected a non-negative decimal integer"
    usage_error "--eps 1e-400 says out of range" layernorm --eps 1e-400 -- "eps: '1e-400' is out of the range of a double"
    for seed in 010 09; do # decimal: 010 is ten (not octal 8), 09 is nine (not refused)
        run rope --seed "$seed" --dry-run
        expect_rc 0
        done_test "--seed $seed is a decimal number"
    done
    usage_error "bad range exits 2" rope --seq 4096:512:x2 -- "seq: bad range '4096:512:x2'"
    usage_error "unknown enum value exits 2" rope --dtype fp64 -- "dtype: unknown value 'fp64'"
    usage_error "odd rotary dim exits 2" rope --dim 8 --rotary-dim 3 -- "rotary_dim 3 must be even"
    usage_error "odd dim without rotary dim exits 2" rope --dim 7 -- "must be even" "--rotary-dim"
    usage_error "rotary dim > dim exits 2" rope --dim 8 --rotary-dim 16 -- "rotary_dim 16 is larger than dim 8"
    usage_error "seqlens without thd exits 2" rope --seqlens 3,4 -- "seqlens applies to layout thd only"
    usage_error "seqlens beyond seq exits 2" rope --layout thd --seq 16 --seqlens 3,17 -- "seqlens[1] = 17 exceeds seq 16"
    usage_error "bad setting value exits 2" rope --min-samples 0 -- "min_samples = 0 is out of bounds"
    usage_error "unknown --impl exits 2" rope --impl optt --dry-run -- "no implementation 'optt'" "did you mean 'opt'"

    # --shard K/N: the shards' cases, together, are the sweep's, each once, in any flag order
    usage_error "--shard 2/2 exits 2" sweep configs/ci.json --shard 2/2 --dry-run -- "--shard 2/2: K must be 0 to N-1 (1)"
    usage_error "--shard x exits 2" sweep configs/ci.json --shard x --dry-run -- "--shard: expected K/N"
    run sweep configs/ci.json --dry-run
    grep -E '^ +[0-9]+  ' "$T/out" | sort -n >"$T/all.txt"
    : >"$T/shards.txt"
    for k in 0 1 2; do
        run sweep --shard "$k/3" --dry-run configs/ci.json
        expect_rc 0
        expect_out_has "shard $k/3 of sweep "
        grep -E '^ +[0-9]+  ' "$T/out" >>"$T/shards.txt"
    done
    sort -n "$T/shards.txt" | cmp -s - "$T/all.txt" || bad "the three shards' cases are not the sweep's, each once"
    run rope --seq 512,1024,2048 --batch 1,2 --dtype fp32,bf16 --shard 1/4 --dry-run
    a=$(grep -E '^ +[0-9]+  ' "$T/out")
    run rope --dtype fp32,bf16 --batch 1,2 --shard 1/4 --seq 512,1024,2048 --dry-run
    [ "$a" = "$(grep -E '^ +[0-9]+  ' "$T/out")" ] || bad "shard 1/4 depends on the order of the flags"
    [ -n "$a" ] || bad "shard 1/4 of 12 cases is empty"
    done_test "--shard K/N: the shards partition the sweep, whatever the order of the flags"

    # --devices: the queue handed out through real worker processes that touch no GPU (--dry-run)
    run sweep configs/ci.json --devices 0,1,2 --dry-run
    expect_rc 0
    expect_out_has "187 cases on 3 GPUs, longest first"
    grep -E '^gpu ' "$T/out" | awk '{print $3}' | sort -n >"$T/dev.txt"
    seq 1 187 | cmp -s - "$T/dev.txt" || bad "the workers were not handed every case once"
    [ "$(grep -E '^gpu ' "$T/out" | awk '{print $2}' | sort -u | tr '\n' ' ')" = "0 1 2 " ] ||
        bad "not every GPU took a case: $(grep -E '^gpu ' "$T/out" | awk '{print $2}' | sort | uniq -c | tr '\n' ' ')"
    done_test "--devices 0,1,2 --dry-run: three workers take every case once"
    # the GEMM ladders' search shared by the workers through the parent's queue of rungs (ladder.c,
    # devices.c): per key, the three together time the whole ladder once (13 rungs), and the two
    # that did not time its best point time it on their own GPU (but the dry run's rates are the same on all)
    out=$(awk '/^ladder /{k=$2; n[k]++; s[k]+=$5; if ($7 != 13 || $13 != 3) bad=bad " " $0} END{for (k in n) printf "%s:%d:%d ", k, n[k], (s[k] >= 13 && s[k] <= 15); print bad}' "$T/out" | tr ' ' '\n' | sort | tr '\n' ' ')
    [ "$out" = " bf16:3:1 fp16:3:1 fp32:3:1 tf32:3:1 " ] || bad "the ladders' shared search: $out"
    done_test "--devices 0,1,2 --dry-run: the GEMM ladders' search shared, each worker a part"
    # on a terminal (script(1) gives it one): the progress line names each GPU's current case
    if command -v script >/dev/null 2>&1; then
        last_args=(sweep configs/ci.json --devices 0,1 --dry-run "(stderr on a terminal)")
        script -qec "'$KBENCH' sweep configs/ci.json --devices 0,1 --dry-run >/dev/null" /dev/null >"$T/err" 2>&1
        tr '\r' '\n' <"$T/err" | grep -qE '^\[[0-9]+/187 cases\] gpu0: [a-z]+ #[0-9]+ gpu1: [a-z]+ #[0-9]+' ||
            bad "no progress line with both GPUs' current cases"
        tr '\r' '\n' <"$T/err" | grep -qE '^\[186/187 cases\]' || bad "the progress never reached 186 of 187 done"
        done_test "--devices on a terminal: a progress line with each GPU's current case"
    else
        t_skip "cli: --devices progress on a terminal (no script(1) to give it one)"
    fi
    usage_error "--devices 0,0 exits 2" sweep configs/ci.json --devices 0,0 --dry-run -- "GPU 0 twice"
    usage_error "--devices x exits 2" sweep configs/ci.json --devices x --dry-run -- "expected all or a list"
    usage_error "--devices with an unknown --impl exits 2" sweep configs/ci.json --devices 0,1 --impl optt --dry-run -- "no implementation 'optt'"
    usage_error "--devices with kbench check exits 2" check --devices 0,1 --dry-run -- "kbench check runs on one GPU"

    usage_error "check of an unknown op exits 2" check nope --dry-run -- "unknown op 'nope'"
    usage_error "'all' in a list says it stands alone" rope --dtype all,fp16 --dry-run -- "'all' stands alone"
    # a unique prefix is the option; several are named as ambiguous
    usage_error "an ambiguous prefix names the options" rope --b 4 --dry-run -- "option '--b' is ambiguous: --batch, --base"
    run rope --bat 4 --dry --seq 16
    expect_rc 0
    expect_out_has "1 cases"
    done_test "a unique prefix is the option (--bat, --dry)"
    # limits are said, never applied silently
    local many=()
    for _ in $(seq 70); do many+=(--quiet); done
    usage_error "more than 64 option flags exits 2" rope "${many[@]}" --dry-run -- "more than 64 option flags"
    usage_error "a --set past its limit exits 2" sweep configs/ci.json --set "seq=$(seq -s, 1 2000)" --dry-run -- "--set: NAME=VALUES longer than 4095 characters"
    # what the user typed is echoed on one line: newlines and escape sequences spelled out
    usage_error "a newline in a value stays one line" rope --seq $'16\n17' --dry-run -- "got '16\\n17'"
    usage_error "an escape sequence in a flag is spelled out" rope $'--frob\e[31m' -- "'--frob\\x1b[31m'"
    run list rope --help
    expect_rc 0
    expect_out_has "usage: kbench list [OP...]"
    done_test "list OP --help prints help"
    # sweep --help's example is a valid sweep file
    "$KBENCH" sweep --help | awk '/^  \{"settings"/{p=1} p&&/^$/{exit} p' >"$T/example.json"
    run sweep "$T/example.json" --dry-run
    expect_rc 0
    expect_out_has "6 cases"
    done_test "sweep --help's example runs"
    for op in layernorm rmsnorm mlp; do # their help sweeps their own parameters, not rope's --seq
        run "$op" --help
        if grep -q -- "--seq\|--batch" "$T/out"; then bad "$op --help names --seq or --batch"; fi
        done_test "$op --help's sweep examples are its own parameters"
    done
    # output paths are checked before the GPU, in dry runs too
    : > "$T/afile"
    usage_error "--dry-run: --json naming a directory exits 2" rope --dry-run --json "$T" -- "--json $T is a directory"
    usage_error "--dry-run: --out-dir naming a file exits 2" rope --dry-run --out-dir "$T/afile" -- "cannot write --csv $T/afile/rope.csv"
    usage_error "--dry-run: --csv under a file exits 2" rope --dry-run --csv "$T/afile/x/y.csv" -- "cannot write --csv $T/afile/x/y.csv"
    usage_error "sweep --dry-run: an unwritable --json exits 2" sweep configs/ci.json --dry-run --json "$T" -- "is a directory"
    usage_error "a sweep past the case limit exits 2" rope --seq 1:65536:x2 --batch 1:65536:x2 --heads 1:65536:x2 \
        --base 2:65537:x2 --dim 2:8192:x2 --rotary-dim 0,2,4,6 --dry-run -- "at most 1000000"
}

# ---- sweep files ---------------------------------------------------------

cli_json_errors() {
    local f="$T/bad.json"
    local line3='    {"op": "rope", "seq": [512 1024]}'
    printf '{\n  "sweeps": [\n%s\n  ]\n}\n' "$line3" >"$f"
    local pre=${line3%%1024*}
    usage_error "JSON syntax error names FILE:LINE:COL" sweep "$f" --dry-run -- "$f:3:$((${#pre} + 1)):" "JSON syntax error"
    # files that are no sweep: said as such, one line, exit 2 (a FIFO without a writer must not hang)
    : >"$T/empty.json"
    usage_error "an empty sweep file says so" sweep "$T/empty.json" --dry-run -- "empty file"
    printf '{"sweeps": [{"op": "rope"' >"$T/trunc.json"
    usage_error "a truncated sweep file says end of file" sweep "$T/trunc.json" --dry-run -- "unexpected end of file"
    { printf '{"sweeps": '; printf '[%.0s' $(seq 5000); printf ']%.0s' $(seq 5000); printf '}\n'; } >"$T/deep.json"
    usage_error "JSON nested 5000 deep says so" sweep "$T/deep.json" --dry-run -- "nested too deep"
    usage_error "a directory is not a sweep file" sweep "$T" --dry-run -- "is a directory, not a sweep file"
    usage_error "/dev/null is not a sweep file" sweep /dev/null --dry-run -- "not a regular file"
    if mkfifo "$T/fifo" 2>/dev/null; then
        usage_error "a FIFO is refused, not waited on" sweep "$T/fifo" --dry-run -- "not a regular file"
    fi

    printf '{"sweps": [{"op": "rope"}]}\n' >"$f"
    usage_error "unknown JSON key exits 2" sweep "$f" --dry-run -- "unknown key 'sweps'" "did you mean 'sweeps'"

    printf '{"sweeps": [{"op": "rope", "sq": 16}]}\n' >"$f"
    usage_error "unknown JSON parameter suggests" sweep "$f" --dry-run -- "sweeps[0]" "no parameter 'sq'" "did you mean 'seq'"

    printf '{"sweeps": [{"op": "ropes"}]}\n' >"$f"
    usage_error "unknown JSON op suggests" sweep "$f" --dry-run -- "unknown op 'ropes'" "did you mean 'rope'"

    printf '{"settings": {"min_tme": 1}, "sweeps": [{"op": "rope"}]}\n' >"$f"
    usage_error "unknown JSON setting suggests" sweep "$f" --dry-run -- "min_tme" "did you mean 'min_time'"

    printf '{"sweeps": [{"op": "rope", "dim": 8, "rotary_dim": 16}]}\n' >"$f"
    usage_error "invalid JSON case exits 2" sweep "$f" --dry-run -- "rotary_dim 16 is larger than dim 8"

    usage_error "missing sweep file exits 2" sweep "$T/none.json" --dry-run -- "$T/none.json" "No such file"
    usage_error "two sweep files exit 2" sweep a.json b.json -- "one sweep file at a time"
}

cli_dry_runs() {
    local f n
    for f in configs/*.json tests/python/*.json; do
        [ -e "$f" ] || continue
        run sweep "$f" --dry-run
        expect_rc 0
        [ -s "$T/err" ] && bad "stderr not empty"
        tail -n 1 "$T/out" | grep -qE '^[1-9][0-9]* cases; ' || bad "no closing 'N cases' line"
        done_test "kbench sweep $f --dry-run exits 0"
    done

    run sweep --dry-run
    expect_rc 0
    tail -n 1 "$T/out" | grep -qE '^[1-9][0-9]* cases; ' || bad "no closing 'N cases' line"
    done_test "kbench sweep --dry-run (built-in default) exits 0"

    # --set replaces an axis in every sweep whose op has it: 24 cases x 3 dtypes
    run sweep configs/layernorm.json --set dtype=all --dry-run
    expect_rc 0
    tail -n 1 "$T/out" | grep -qE '^72 cases; ' || bad "want 72 cases: $(tail -n 1 "$T/out")"
    [ "$(grep -cE ' dtype=fp32 ' "$T/out")" -eq 24 ] || bad "want 24 fp32 cases"
    done_test "kbench sweep --set dtype=all multiplies the cases"
    usage_error "sweep --set with a parameter no sweep has exits 2" sweep configs/layernorm.json --set heads=4 --dry-run -- \
        "--set heads" "configs/layernorm.json"
    usage_error "sweep --set without = exits 2" sweep configs/layernorm.json --set dtype --dry-run -- "NAME=VALUES"
    usage_error "sweep --set with a refused value exits 2" sweep configs/layernorm.json --set dtype=fp99 --dry-run -- \
        "fp99" "choose from"

    run check --dry-run
    expect_rc 0
    [ -s "$T/err" ] && bad "stderr not empty"
    tail -n 1 "$T/out" | grep -qE '^[1-9][0-9]* cases; ' || bad "no closing 'N cases' line"
    done_test "kbench check --dry-run exits 0"

    # the case count is the product of the axes: 2 seq x 3 dtypes x 2 passes
    run rope --seq 16,32 --dtype all --pass fwd,bwd --batch 1 --dry-run
    expect_rc 0
    n=$(grep -cE '^ *[0-9]+  rope ' "$T/out")
    [ "$n" -eq 12 ] || bad "$n case lines, want 12"
    tail -n 1 "$T/out" | grep -q '^12 cases; ' || bad "closing line: $(tail -n 1 "$T/out")"
    done_test "kbench rope --dry-run expands the cartesian product"

    # flags override a sweep file's settings; a bad flag value is still refused
    printf '{"settings": {"impl": "nope"}, "sweeps": [{"op": "rope", "seq": 16}]}\n' >"$T/s.json"
    run sweep "$T/s.json" --impl naive --dry-run
    expect_rc 0
    done_test "flags override the sweep file's settings"
}

# ---- the GPU, or its absence ---------------------------------------------

cli_device() {
    run device
    local drc=$rc
    gpu_rc=$drc # for later tests: 0 with a GPU, 3 without
    if [ "$drc" -eq 3 ]; then
        expect_stderr_lines 1
        done_test "kbench device exits 3 with one line on stderr (no GPU)"

        run rope --seq 16 --batch 1 --out-dir "$T/res"
        expect_rc 3
        expect_stderr_lines 1
        [ -e "$T/res" ] && bad "wrote $T/res without a GPU"
        done_test "kbench rope exits 3 with one line on stderr (no GPU)"

        run check
        expect_rc 3
        expect_stderr_lines 1
        done_test "kbench check exits 3 with one line on stderr (no GPU)"

        run selftest
        expect_rc 3
        expect_stderr_lines 1
        done_test "kbench selftest exits 3 with one line on stderr (no GPU)"

        run sweep configs/ci.json --devices all --dry-run
        expect_rc 3
        expect_stderr_lines 1
        expect_err_has "--devices all: no CUDA device"
        done_test "--devices all exits 3 with one line (no GPU)"

        run sweep configs/ci.json --devices 0
        expect_rc 3
        expect_stderr_lines 1
        expect_err_has "--devices: no CUDA device (GPU 0 asked for)"
        done_test "--devices 0 exits 3 with one line (no GPU)"
        t_skip "cli: kbench selftest passes on the GPU"

        t_skip "cli: kbench check passes on the GPU"
        t_skip "cli: kbench rope writes CSV and JSON on the GPU"
        echo "GPU tests skipped: no GPU (kbench device exits 3)"
    elif [ "$drc" -eq 0 ]; then
        expect_out_has "device" "SMs" "copy" "GEMM" "bf16" "tf32"
        done_test "kbench device exits 0 (GPU)"
        t_skip "cli: kbench rope exits 3 with one line on stderr (no GPU)"
        t_skip "cli: kbench check exits 3 with one line on stderr (no GPU)"

        run check
        expect_rc 0
        tail -n 1 "$T/out" | grep -qE '^check: [1-9][0-9]* passed, 0 failed, [0-9]+ n/a$' || bad "closing line: $(tail -n 1 "$T/out")"
        done_test "kbench check passes on the GPU"

        t_skip "cli: kbench selftest exits 3 with one line on stderr (no GPU)"
        run selftest
        expect_rc 0
        tail -n 1 "$T/out" | grep -qE '^selftest: 4 passed, 0 failed$' || bad "closing line: $(tail -n 1 "$T/out")"
        grep -q '^  L2 flush: .*PASS$' "$T/out" || bad "no passing L2 flush line"
        done_test "kbench selftest passes on the GPU"

        run rope --seq 16,32 --batch 1 --heads 2 --dim 64 --min-samples 3 --min-time 0 --warmup 1 \
            --max-noise 100 --timeout 2 --quiet --out-dir "$T/res" # stop at 3 samples: tiny kernels are noisy
        expect_rc 0
        [ -s "$T/res/rope.csv" ] || bad "no $T/res/rope.csv"
        [ -s "$T/res/rope.json" ] || bad "no $T/res/rope.json"
        if [ -s "$T/res/rope.csv" ]; then
            # header + 2 cases x 2 implementations, all verified
            [ "$(nlines "$T/res/rope.csv")" -eq 5 ] || bad "$(nlines "$T/res/rope.csv") CSV lines, want 5"
            [ "$(tail -n +2 "$T/res/rope.csv" | grep -c ',pass,')" -eq 4 ] || bad "not every row verified"
        fi
        done_test "kbench rope writes CSV and JSON on the GPU"

        # --order sequence: the same rows, each implementation timed to its end before the next
        run rope --seq 16,32 --batch 1 --heads 2 --dim 64 --min-samples 3 --min-time 0 --warmup 1 \
            --max-noise 100 --timeout 2 --quiet --order sequence --out-dir "$T/res-turns"
        expect_rc 0
        if [ -s "$T/res-turns/rope.csv" ]; then
            [ "$(nlines "$T/res-turns/rope.csv")" -eq 5 ] || bad "$(nlines "$T/res-turns/rope.csv") CSV lines, want 5"
            [ "$(tail -n +2 "$T/res-turns/rope.csv" | grep -c ',pass,')" -eq 4 ] || bad "not every row verified"
            csv_col "$T/res-turns/rope.csv" samples | awk '$1 < 3 { bad = 1 } END { exit bad }' || bad "a row under 3 samples"
        else
            bad "no $T/res-turns/rope.csv"
        fi
        done_test "kbench rope --order sequence times one implementation after another on the GPU"
    else
        bad "kbench device exits $drc (want 0 with a GPU, 3 without)"
        done_test "kbench device exits 0 or 3"
    fi
}

# ---- the MLP ---------------------------------------------------------------

# csv_col FILE NAME: the values of column NAME, one per data row
csv_col() {
    awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } c { print $c }' "$1"
}

cli_mlp() {
    run list mlp
    expect_rc 0
    expect_out_has "mlp:" "compute-bound" "{off,on}" "naive" "cublas" "cublas_cat"
    local p
    for p in dtype tf32 tokens hidden inter; do
        grep -qE "^ +$p( |$)" "$T/out" || bad "parameter $p not listed"
    done
    expect_out_has "[2048, 1..1048576]" "[1024, 1..65536]" "[11008, 1..262144]"
    done_test "kbench list mlp shows its parameters and implementations"

    usage_error "mlp: tf32 with bf16 exits 2" mlp --dtype bf16 --tf32 on --dry-run -- "tf32 applies to dtype fp32 only"
    usage_error "mlp: tokens 0 exits 2" mlp --tokens 0 -- "tokens = 0 is out of bounds"
    usage_error "mlp: a tensor over 2^31 elements exits 2" mlp --tokens 1048576 --hidden 4096 --dry-run -- "supports up to 2^31-1"

    run mlp --dtype fp32 --tf32 off,on --tokens 1,16 --hidden 64 --inter 128 --dry-run
    expect_rc 0
    [ "$(grep -cE '^ *[0-9]+  mlp ' "$T/out")" -eq 4 ] || bad "want 4 case lines"
    done_test "kbench mlp --dry-run expands dtype x tf32 x tokens"

    run sweep configs/mlp.json --dry-run
    expect_rc 0
    tail -n 1 "$T/out" | grep -q '^18 cases; ' || bad "closing line: $(tail -n 1 "$T/out")"
    done_test "configs/mlp.json: 18 cases"

    run sweep configs/mlp-grid.json --dry-run
    expect_rc 0
    tail -n 1 "$T/out" | grep -q '^96 cases; ' || bad "closing line: $(tail -n 1 "$T/out")"
    done_test "configs/mlp-grid.json: 12 token counts x 4 widths x 2 dtypes"

    # every (warpgroups, bn, cluster) fused_wgmma takes: 2 with one warpgroup, 8 with two
    run sweep configs/mlp-tiles.json --dry-run
    expect_rc 0
    tail -n 1 "$T/out" | grep -q '^120 cases; ' || bad "closing line: $(tail -n 1 "$T/out")"
    [ "$(grep -cE '^ *[0-9]+  mlp .* cluster=2 warpgroups=1 ' "$T/out")" -eq 0 ] || bad "a one-warpgroup case in clusters of 2"
    done_test "configs/mlp-tiles.json: 6 token counts x 2 widths x 10 tiles"

    run check mlp --dry-run
    expect_rc 0
    grep -qE '^ *[0-9]+  rope ' "$T/out" && bad "check mlp lists rope cases"
    grep -q 'dtype=fp32 tf32=on tokens=130 hidden=257 inter=513' "$T/out" || bad "no fp32/tf32 130 x 257 x 513 case"
    done_test "kbench check mlp --dry-run"

    if [ "${gpu_rc:-3}" -ne 0 ]; then
        run mlp --tokens 16 --hidden 64 --inter 128 --out-dir "$T/mres"
        expect_rc 3
        expect_stderr_lines 1
        done_test "kbench mlp exits 3 with one line on stderr (no GPU)"
        t_skip "cli: kbench mlp reports verified rows and % of the GEMM ceiling on the GPU"
        return
    fi
    t_skip "cli: kbench mlp exits 3 with one line on stderr (no GPU)"
    # every row at a small shape, a sample of 64 at a large one (200 x 4096 x 11008 > 2^31)
    run mlp --tokens 16 --hidden 64 --inter 128 --min-samples 3 --min-time 0 --warmup 1 --max-noise 100 --timeout 2 \
        --quiet --csv "$T/m1.csv" --json "$T/m1.json"
    expect_rc 0
    [ "$(csv_col "$T/m1.csv" verified | sort -u)" = "pass" ] || bad "not every row verified"
    [ "$(csv_col "$T/m1.csv" verified_rows | sort -u)" = "16" ] || bad "verified_rows: $(csv_col "$T/m1.csv" verified_rows | tr '\n' ' ')"
    csv_col "$T/m1.csv" pct_of_gemm | grep -qvE '^[0-9.]+$' && bad "a row without pct_of_gemm"
    csv_col "$T/m1.csv" pct_of_copy | grep -qvE '^[0-9.]+$' && bad "a row without pct_of_copy"
    grep -q '"gemm_tflops"' "$T/m1.json" || bad "no gemm_tflops in the JSON"
    run mlp --tokens 200 --hidden 4096 --inter 11008 --impl cublas --min-samples 3 --min-time 0 --warmup 1 \
        --max-noise 100 --timeout 2 --quiet --csv "$T/m2.csv"
    expect_rc 0
    [ "$(csv_col "$T/m2.csv" verified_rows)" = "64" ] || bad "sampled verified_rows: $(csv_col "$T/m2.csv" verified_rows)"
    [ "$(csv_col "$T/m2.csv" verified)" = "pass" ] || bad "the sampled case did not pass"
    done_test "kbench mlp reports verified rows and % of the GEMM ceiling on the GPU"
}

# ---- kbench compare (no GPU) ----------------------------------------------

# summary_is TEXT: the last line of stdout is TEXT
summary_is() { [ "$(tail -n 1 "$T/out")" = "$1" ] || bad "summary: $(tail -n 1 "$T/out"), want: $1"; }

cli_compare() {
    local d=tests/data/compare
    run compare --help
    expect_rc 0
    expect_out_has "usage: kbench compare BASE.json NEW.json" "Matching:" "every parameter" "--threshold PCT" \
        "noise" "Exit codes: 0 no regression, 4" "only in base"
    done_test "kbench compare --help exits 0 and explains matching and exit codes"

    run help compare
    expect_rc 0
    expect_out_has "usage: kbench compare"
    done_test "kbench help compare exits 0"

    run --help
    expect_out_has "compare BASE NEW" "4 a regression found by compare"
    done_test "kbench --help lists compare and exit code 4"

    run compare "$d/base.json" "$d/base.json"
    expect_rc 0
    [ -s "$T/err" ] && bad "stderr not empty"
    summary_is "compare: 6 cases, 0 faster, 0 slower, 6 same, 0 only in base, 0 only in new; by rule: 6 threshold, 0 mann-whitney"
    done_test "compare: a file with itself exits 0, every case same"

    # new.json: rope fwd naive 1.18x faster, rope fwd opt 11% slower, rope bwd opt 5.5%
    # slower inside its noise (0.5% + 6%), mlp cublas (params in another order) same,
    # layernorm only in base, mlp fused only in new
    run compare "$d/base.json" "$d/new.json"
    expect_rc 4
    summary_is "compare: 5 cases, 1 faster, 1 slower, 3 same, 1 only in base, 1 only in new; by rule: 5 threshold, 0 mann-whitney"
    grep -E '^rope .* opt +0\.0494 +0\.0550 +0\.90x +slower' "$T/out" >/dev/null || bad "no slower line for rope fwd opt"
    grep -E '^rope .*pass=fwd.* naive .* 1\.18x +faster' "$T/out" >/dev/null || bad "no faster line for rope fwd naive"
    grep -E '^rope .*pass=bwd.* opt .* same +threshold +noise 6\.5%' "$T/out" >/dev/null || bad "no same-by-noise line for rope bwd opt"
    grep -E '^mlp .*tokens=2048.* cublas .* same' "$T/out" >/dev/null || bad "mlp cublas did not match across param order"
    expect_out_has "only in base (1):" "only in new (1):" "layernorm" "fused"
    done_test "compare: a regression exits 4 with per-case verdicts"

    # --plot: the chart beside the verdicts (a bar per matched case), or a one-line refusal
    usage_error "compare --plot: not a .png" compare "$d/base.json" "$d/new.json" --plot "$T/cmp.jpg" -- "--plot: expected a .png file"
    # a chart that cannot be drawn (no gnuplot on PATH): exit 1, but never over a regression's 4
    PATH=/nonexistent run compare "$d/base.json" "$d/new.json" --plot "$T/nogp.png"
    expect_rc 4
    expect_err_has "kbench compare: --plot:"
    PATH=/nonexistent run compare "$d/base.json" "$d/base.json" --plot "$T/nogp.png"
    expect_rc 1
    expect_err_has "kbench compare: --plot:"
    done_test "compare --plot without gnuplot: exit 1, a regression's exit 4 kept"
    if command -v gnuplot >/dev/null 2>&1; then
        rm -f "$T/cmp.png"
        KBENCH_PLOT_DATA=$T/cmpplot run compare "$d/base.json" "$d/new.json" --plot "$T/cmp.png"
        expect_rc 4
        expect_out_has "wrote $T/cmp.png"
        [ -s "$T/cmp.png" ] || bad "no PNG at $T/cmp.png"
        [ "$(grep -c '' "$T/cmpplot/speedup.dat")" -eq 5 ] || bad "want 5 bars (the matched cases): $(cat "$T/cmpplot/speedup.dat")"
        grep -q '^1 0.898.* 14034728 "rope opt fwd ' "$T/cmpplot/speedup.dat" || bad "the slower case is not red: $(cat "$T/cmpplot/speedup.dat")"
        grep -q "sub='5 cases: 1 faster, 1 slower, 3 same" "$T/cmpplot/speedup.args" || bad "subtitle: $(cat "$T/cmpplot/speedup.args")"
        done_test "compare --plot draws a bar per matched case, the regression in red"
    else
        t_skip "compare --plot draws a bar per matched case (gnuplot not installed)"
    fi

    run compare "$d/base.json" "$d/new.json" --threshold 15
    expect_rc 0
    summary_is "compare: 5 cases, 1 faster, 0 slower, 4 same, 1 only in base, 1 only in new; by rule: 5 threshold, 0 mann-whitney"
    done_test "compare --threshold 15 exits 0"

    run compare --impl naive "$d/base.json" "$d/new.json"
    expect_rc 0
    summary_is "compare: 2 cases, 1 faster, 0 slower, 1 same, 0 only in base, 0 only in new; by rule: 2 threshold, 0 mann-whitney"
    done_test "compare --impl naive restricts to naive (exit 0)"

    run compare "$d/base.json" "$d/new.json" --impl opt --quiet
    expect_rc 4
    [ "$(grep -c 'slower' "$T/out")" -eq 2 ] || bad "want the slower line and the summary only"
    grep -q 'only in base (' "$T/out" && bad "--quiet lists the cases in one file"
    summary_is "compare: 2 cases, 0 faster, 1 slower, 1 same, 1 only in base, 0 only in new; by rule: 2 threshold, 0 mann-whitney"
    done_test "compare --quiet prints the regression and the summary"

    run compare "$d/base.json" "$d/failed.json"
    expect_rc 4
    summary_is "compare: 6 cases, 0 faster, 0 slower, 5 same, 0 only in base, 0 only in new, 1 FAILED; by rule: 5 threshold, 0 mann-whitney"
    grep -E '^rope .*pass=fwd.* opt .* FAILED +- +new: y: rel_err' "$T/out" >/dev/null || bad "no FAILED line with the error"
    done_test "compare: a case that fails in new exits 4 (FAILED)"

    run compare "$d/failed.json" "$d/base.json"
    expect_rc 0
    summary_is "compare: 6 cases, 0 faster, 0 slower, 5 same, 0 only in base, 0 only in new, 1 n/a; by rule: 5 threshold, 0 mann-whitney"
    done_test "compare: a case fixed in new is n/a, not a regression"

    run compare "$d/base.json" "$d/new.json" --csv "$T/cmp.csv"
    expect_rc 4
    if [ -s "$T/cmp.csv" ]; then
        [ "$(nlines "$T/cmp.csv")" -eq 8 ] || bad "$(nlines "$T/cmp.csv") CSV lines, want 8 (header, 5 cases, 2 in one file)"
        head -n 1 "$T/cmp.csv" | grep -q '^op,impl,pass,dtype,.*,base_median_ms,new_median_ms,.*,speedup,threshold_pct,verdict,rule,p_value,note,base_run,new_run$' ||
            bad "CSV header: $(head -n 1 "$T/cmp.csv")"
        [ "$(csv_col "$T/cmp.csv" verdict | sort | uniq -c | tr -s ' ' | tr '\n' ';')" = " 1 faster; 1 only in base; 1 only in new; 3 same; 1 slower;" ] ||
            bad "CSV verdicts: $(csv_col "$T/cmp.csv" verdict | tr '\n' ' ')"
        [ "$(csv_col "$T/cmp.csv" rule | sort | uniq -c | tr -s ' ' | tr '\n' ';')" = " 2 ; 5 threshold;" ] ||
            bad "CSV rules: $(csv_col "$T/cmp.csv" rule | tr '\n' ' ')"
    else
        bad "no $T/cmp.csv"
    fi
    done_test "compare --csv writes the comparison table"

    sed 's/"name": "NVIDIA H100 80GB HBM3"/"name": "NVIDIA H200"/; s/"version": "0.1.0"/"version": "0.2.0"/' \
        "$d/base.json" >"$T/h200.json"
    run compare "$d/base.json" "$T/h200.json"
    expect_rc 0
    expect_err_has "different devices: base NVIDIA H100 80GB HBM3, new NVIDIA H200" "different kbench versions: base 0.1.0, new 0.2.0"
    summary_is "compare: 6 cases, 0 faster, 0 slower, 6 same, 0 only in base, 0 only in new; by rule: 6 threshold, 0 mann-whitney"
    done_test "compare: different devices and versions are noted, not refused"

    # samples-*.json keep their samples (samples_ms): rope fwd naive same, rope fwd opt 3%
    # slower (1% noise), layernorm 0.5% slower (significant, under the 1% minimum effect)
    # by mann-whitney at --min-effect 1; mlp cublas (no samples) and mlp fused (samples in
    # base only) by threshold
    run compare "$d/samples-base.json" "$d/samples-new.json" --min-effect 1 --csv "$T/cmp-samples.csv"
    expect_rc 4
    summary_is "compare: 5 cases, 1 faster, 1 slower, 3 same, 0 only in base, 0 only in new; by rule: 2 threshold, 3 mann-whitney"
    grep -E '^rope .*pass=fwd.* opt .* 0\.97x +slower +mann-whitney +p=5e-17$' "$T/out" >/dev/null || bad "no slower line by mann-whitney for rope fwd opt"
    grep -E '^layernorm .* same +mann-whitney +p=7\.1e-18, change under 1%$' "$T/out" >/dev/null || bad "no same-under-the-minimum-effect line for layernorm"
    grep -E '^mlp .* fused .* faster +threshold +samples: base 50, new 0' "$T/out" >/dev/null || bad "no threshold line for mlp fused"
    expect_out_has "Mann-Whitney U test at p < 0.001"
    [ "$(csv_col "$T/cmp-samples.csv" rule | tr '\n' ' ')" = "mann-whitney mann-whitney mann-whitney threshold threshold " ] ||
        bad "CSV rules: $(csv_col "$T/cmp-samples.csv" rule | tr '\n' ' ')"
    [ "$(csv_col "$T/cmp-samples.csv" p_value | head -n 2 | tr '\n' ' ')" = "0.3647 5.015e-17 " ] ||
        bad "CSV p-values: $(csv_col "$T/cmp-samples.csv" p_value | tr '\n' ' ')"
    done_test "compare: rows with samples are decided by the Mann-Whitney test, the others by the threshold"

    run compare "$d/samples-base.json" "$d/samples-new.json"
    expect_rc 0
    summary_is "compare: 5 cases, 1 faster, 0 slower, 4 same, 0 only in base, 0 only in new; by rule: 2 threshold, 3 mann-whitney"
    expect_out_has "the medians differ by 5% or more"
    done_test "compare's default minimum effect (5%) does not call the 3% slowdown"

    # twin-1/2.json: two runs of one build on an H100 (configs/rope.json --save-samples, the
    # 12 rows whose medians moved most, 1.8-3.65%, 200 of each row's samples); slowed.json:
    # a build that launches the RoPE kernel twice, the same rows
    run compare "$d/twin-1.json" "$d/twin-2.json"
    expect_rc 0
    summary_is "compare: 12 cases, 0 faster, 0 slower, 12 same, 0 only in base, 0 only in new; by rule: 0 threshold, 12 mann-whitney"
    # at --min-effect 1 the test calls the twins apart (p < 1e-15): what the default is above
    run compare "$d/twin-1.json" "$d/twin-2.json" --min-effect 1
    expect_rc 0
    summary_is "compare: 12 cases, 6 faster, 0 slower, 6 same, 0 only in base, 0 only in new; by rule: 0 threshold, 12 mann-whitney"
    run compare "$d/twin-1.json" "$d/slowed.json"
    expect_rc 4
    summary_is "compare: 12 cases, 0 faster, 12 slower, 0 same, 0 only in base, 0 only in new; by rule: 0 threshold, 12 mann-whitney"
    done_test "compare: two runs of one build are same, the slowed build slower (H100 samples)"

    run compare "$d/samples-new.json" "$d/samples-new.json"
    expect_rc 0
    summary_is "compare: 5 cases, 0 faster, 0 slower, 5 same, 0 only in base, 0 only in new; by rule: 2 threshold, 3 mann-whitney"
    done_test "compare: a file with samples against itself is same throughout"

    run compare --help
    expect_out_has "--min-effect PCT" "Mann-Whitney U test" "p < 0.001" "samples_ms" "two processes" "[5]"
    done_test "kbench compare --help explains the mann-whitney rule"

    local f
    for f in results/curated/*/bench-rope-*.json; do
        [ -e "$f" ] || continue
        run compare "$f" "$f"
        expect_rc 0
        tail -n 1 "$T/out" | grep -qE '^compare: [1-9][0-9]* cases, 0 faster, 0 slower, [1-9][0-9]* same, 0 only in base, 0 only in new; by rule: [0-9]+ threshold, 0 mann-whitney$' ||
            bad "summary: $(tail -n 1 "$T/out")"
        done_test "compare reads the real result file $f"
    done

    # exit 2: one line naming the file and what is wrong
    usage_error "compare: a missing file exits 2" compare "$d/base.json" "$T/none.json" -- "$T/none.json: not found"
    printf '{"kbench": {}, "results": [\n  {"op": "rope",}\n]}\n' >"$T/syntax.json"
    usage_error "compare: a file that is not JSON exits 2" compare "$T/syntax.json" "$d/new.json" -- "$T/syntax.json: not JSON" "line 2"
    : >"$T/empty.json"
    usage_error "compare: an empty file exits 2" compare "$d/base.json" "$T/empty.json" -- "$T/empty.json: not JSON"
    usage_error "compare: a sweep config exits 2" compare configs/ci.json "$d/new.json" -- "configs/ci.json: not a kbench result file"
    printf '{"kbench": {"version": "0.1.0"}, "results": [{"op": "rope", "impl": "opt"}]}\n' >"$T/noparams.json"
    usage_error "compare: a row without params exits 2" compare "$d/base.json" "$T/noparams.json" -- "not a kbench result file" "results[0]" "params"
    usage_error "compare: a directory exits 2" compare "$d" "$d/new.json" -- "is a directory"
    usage_error "compare: one file exits 2" compare "$d/base.json" -- "want two result files"
    usage_error "compare: three files exit 2" compare "$d/base.json" "$d/new.json" "$d/new.json" -- "want two result files"
    usage_error "compare: a bad --threshold exits 2" compare "$d/base.json" "$d/new.json" --threshold fast -- "--threshold" "'fast'"
    usage_error "compare: a negative --threshold exits 2" compare "$d/base.json" "$d/new.json" --threshold -3 -- "--threshold"
    usage_error "compare: an unknown --impl exits 2" compare "$d/base.json" "$d/new.json" --impl optt -- "no implementation 'optt'"
    usage_error "compare: an empty --impl exits 2" compare "$d/base.json" "$d/new.json" --impl "" -- "--impl: an empty list"
    usage_error "compare: --impl , exits 2" compare "$d/base.json" "$d/new.json" --impl , -- "--impl: an empty name"
    usage_error "compare: --impl opt, exits 2" compare "$d/base.json" "$d/new.json" --impl opt, -- "an empty name in the list 'opt,'"
    usage_error "compare: a bad --min-effect exits 2" compare "$d/base.json" "$d/new.json" --min-effect -1 -- "--min-effect" "'-1'"
    sed 's/"samples_ms": \[/"samples_ms": ["fast", /' "$d/samples-new.json" >"$T/badsamples.json"
    usage_error "compare: a non-numeric sample exits 2" compare "$d/samples-base.json" "$T/badsamples.json" -- \
        "$T/badsamples.json: not a kbench result file" "results[0]" "\"samples_ms\"[0] is not a positive number"
    usage_error "compare: a misspelt flag suggests" compare "$d/base.json" "$d/new.json" --treshold 3 -- "did you mean --threshold"
    usage_error "compare: an unwritable --csv exits 2" compare "$d/base.json" "$d/new.json" --csv "$T/none/x/cmp.csv" -- "cannot write $T/none/x/cmp.csv"
}

# ---- the command line as the fuzzer found it (tests/fuzz/fuzz_cmdline.c) --

cli_cmdline() {
    # getopt reads "-seq" as -s -e -q and stays inside the word: the message named the word before it
    usage_error "an unknown short option is named as typed" rope -seq 4 -- "unknown option '-s'" "two dashes"
    usage_error "an unknown short option alone" rope --dry-run -x -- "unknown option '-x'"
    # the unknown op was refused after the other ops' cases were made, and they leaked
    usage_error "check: an unknown op among known ones" check rope nosuch --dry-run -- "unknown op 'nosuch'"
    # the dry run's "no implementation" message echoed the control character raw
    usage_error "--impl with a control character is refused, escaped" rope --impl $'opt\x02' --dry-run -- \
        "impl: a control character in 'opt\\x02'"
    # duplicates were looked for pairwise: this took 8 s (minutes under ASan)
    local t0=$SECONDS
    run rope --seq 1:100000,100001:200000,5 --dry-run
    expect_rc 2
    expect_stderr_lines 1
    expect_err_has "seq: the value 5 comes twice"
    [ $((SECONDS - t0)) -le 5 ] || bad "took $((SECONDS - t0)) s, want a moment"
    done_test "a duplicate in a long list of ranges is found at once"
}

# ---- plugins (include/kbench_plugin.h) -------------------------------------
# $KB_TEST_PLUGINS: tests/plugins/*.c built (make test-plugins); $KB_EXAMPLES:
# examples/plugins (make examples). Every refusal comes before the GPU: exit 2,
# one line naming the file.
cli_plugins() {
    local P=${KB_TEST_PLUGINS:-} E=${KB_EXAMPLES:-}
    if [ -z "$P" ] || [ ! -f "$P/noop.so" ]; then
        t_skip "cli: plugins (KB_TEST_PLUGINS not built: make test-plugins)"
        return
    fi
    local spec
    for spec in "not_a_library|cannot load it as a shared library" "no_entry|no entry point kbench_plugin()" \
        "null_table|kbench_plugin() returned NULL" "bad_abi|plugin ABI version 3; this kbench takes version 2" \
        "abi_one|plugin ABI version 1; this kbench takes version 2: give prepare the stream" \
        "bad_tunable|tunable 'block': default '512' is not among its values (128,256)" \
        "bad_inplace|inplace names 'q', not an input of rope" \
        "dup_output|an output named twice in inplace and accumulates" \
        "unknown_op|unknown op 'softmax'" "name_clash|'opt' is a built-in implementation of layernorm" \
        "null_launch|has no launch" "dup_name|two implementations of layernorm named 'twice'" \
        "bad_name_space|bad name 'my ln'" "bad_name_eq|bad name 'a=b'"; do
        local lib=${spec%%|*} msg=${spec#*|}
        usage_error "plugin info refuses $lib.so" plugin info "$P/$lib.so" -- "$P/$lib.so" "$msg"
    done
    usage_error "--impl NAME=PATH refuses a broken plugin before the GPU" layernorm --impl mine="$P/bad_abi.so" \
        -- "plugin ABI version 3"
    usage_error "a plugin named like a built-in is refused" layernorm --impl opt="$P/noop.so" --dry-run \
        -- "'opt' is a built-in implementation of layernorm"
    usage_error "a missing plugin library" layernorm --impl mine="$T/nope.so" --dry-run -- "$T/nope.so: no such file"
    usage_error "plugin info of a missing library" plugin info "$T/nope.so" -- "no such file"
    usage_error "plugin: an unknown subcommand" plugin load "$P/noop.so" -- "unknown subcommand 'load'"
    usage_error "plugin without a subcommand: one line" plugin -- "want a subcommand: plugin info LIB.so"
    usage_error "--plugin with an empty entry" layernorm --plugin , --dry-run -- "plugins: an empty entry in ','"

    run plugin info "$P/noop.so"
    expect_rc 0
    expect_out_has "kbench plugin ABI 2, 1 implementation" "layernorm" "noop" "the tensors of layernorm" "gamma" "dgamma"
    done_test "plugin info lists a plugin and its op's tensors"

    run layernorm --rows 7 --cols 300 --impl naive,mine="$P/noop.so" --dry-run
    expect_rc 0
    expect_out_has "1 cases"
    done_test "--impl NAME=PATH with --dry-run"

    run layernorm --rows 7 --cols 300 --plugin mine="$P/noop.so" --impl mine --dry-run
    expect_rc 0
    done_test "--plugin NAME=PATH, then NAME in --impl"

    run rmsnorm --impl mine="$P/noop.so" --dry-run
    expect_rc 2
    expect_err_has "--impl: no implementation 'mine' in this sweep"
    done_test "a layernorm plugin is not an rmsnorm implementation"

    # a sweep file names its plugins, paths relative to the file
    mkdir -p "$T/sw"
    cp "$P/noop.so" "$T/sw/libnoop.so"
    printf '{"settings": {"plugins": {"mine": "libnoop.so"}, "impl": "opt,mine"},\n "sweeps": [{"op": "layernorm", "rows": 7, "cols": 300}]}\n' >"$T/sw/s.json"
    run sweep "$T/sw/s.json" --dry-run
    expect_rc 0
    expect_out_has "1 cases"
    done_test "plugins in a sweep file, relative to it"
    printf '{"settings": {"plugins": {"mine": "nope.so"}}, "sweeps": [{"op": "layernorm"}]}\n' >"$T/sw/t.json"
    usage_error "a sweep file's missing plugin names the resolved path" sweep "$T/sw/t.json" --dry-run -- "$T/sw/nope.so: no such file"
    printf '{"settings": {"plugins": ["libnoop.so"]}, "sweeps": [{"op": "layernorm"}]}\n' >"$T/sw/u.json"
    usage_error "settings.plugins must be an object" sweep "$T/sw/u.json" --dry-run -- "settings.plugins: expected an object"

    run sweep configs/layernorm.json --plugin mine="$P/noop.so" --set impl=opt,mine --dry-run
    expect_rc 0
    expect_out_has "cases"
    done_test "sweep --plugin NAME=PATH --set impl=opt,NAME"
    usage_error "--set of a setting is checked like its flag" sweep configs/layernorm.json --set timing=x --dry-run \
        -- "--set timing: expected auto, events or graph, got 'x'"

    if [ -n "$E" ] && [ -f "$E/libkb_layernorm_plain.so" ]; then
        local ex
        for ex in layernorm_plain rope_gptj mlp_cublas rope_inplace layernorm_accum; do
            run plugin info "$E/libkb_$ex.so"
            expect_rc 0
            expect_out_has "kbench plugin ABI 2"
            done_test "plugin info on the example $ex"
        done
        run layernorm --rows 7 --cols 300 --impl opt,example="$E/libkb_layernorm_plain.so" --pass fwd,bwd --dry-run
        expect_rc 0
        expect_out_has "2 cases"
        done_test "the LayerNorm example with --dry-run"
    else
        t_skip "cli: example plugins (KB_EXAMPLES not built: make examples)"
    fi
}

cli_compare_fifo() {
    mkfifo "$T/fifo.json"
    run compare "$T/fifo.json" "$T/fifo.json" # must not block waiting for a writer
    expect_rc 2
    expect_err_has "not a regular file"
    done_test "compare refuses a FIFO instead of blocking"
    rm -f "$T/fifo.json"
    usage_error "compare names the short option of a cluster, not a word" compare -qx a.json b.json -- "unknown option '-q'"
    run compare $'--\x1bbad' a.json b.json
    expect_rc 2
    expect_stderr_lines 1
    expect_err_has '\x1b'
    grep -q $'\x1b' "$T/err" && bad "a raw ESC on stderr"
    done_test "compare escapes control characters in its messages"
    usage_error "compare --impl of a name in neither file lists theirs, each once" compare \
        "$root/tests/data/compare/base.json" "$root/tests/data/compare/new.json" --impl zz \
        -- "no implementation 'zz' in either file (they have: naive, opt, cublas, fused)"
}

# ---- kbench merge (no GPU) ------------------------------------------------

# merge_part FILE SWEEP SHARD DEVICE CASES...: a result file of a 4-case
# sweep's shard ("" for none) holding rows naive and opt of each case, and
# its CSV beside it
merge_part() {
    local f=$1 sweep=$2 shard=$3 dev=$4 rows="" csv c sh=""
    shift 4
    [ -n "$shard" ] && sh=", \"shard\": \"$shard\""
    csv="op,pass,impl,dtype,layout,seq,median_ms,gbps,pct_of_copy,copy_gbps,case"
    for c in "$@"; do
        rows="$rows${rows:+,}{\"op\": \"rope\", \"case\": $c, \"impl\": \"naive\", \"params\": {\"seq\": $((c * 100))}, \"median_ms\": 1},"
        rows="$rows{\"op\": \"rope\", \"case\": $c, \"impl\": \"opt\", \"params\": {\"seq\": $((c * 100))}, \"median_ms\": 0.5}"
        csv="$csv
rope,fwd,naive,bf16,sbhd,$((c * 100)),1,100,10,1000,$c
rope,fwd,opt,bf16,sbhd,$((c * 100)),0.5,200,20,1000,$c"
    done
    printf '{"kbench": {"version": "0.1.0", "git_commit": "abc", "sweep_id": "%s", "sweep_cases": 4%s},\n "device": {"name": "%s"},\n "results": [%s]}\n' \
        "$sweep" "$sh" "$dev" "$rows" >"$f"
    printf '%s\n' "$csv" >"${f%.json}.csv"
}

cli_merge() {
    local d=$T/merge
    mkdir -p "$d"
    merge_part "$d/p0.json" 00000000000000aa 0/2 H100 3 0
    merge_part "$d/p1.json" 00000000000000aa 1/2 H100 2 1
    run merge -o "$d/all.json" --csv "$d/all.csv" "$d/p0.json" "$d/p1.json"
    expect_rc 0
    expect_stderr_lines 0
    expect_out_has "merged 2 part(s): 8 rows, 4 of 4 cases"
    if have_python3; then
        out=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join("%d%s" % (r["case"], r["impl"][0]) for r in d["results"]), len(d["devices"]), "shard" in d["kbench"], d["kbench"]["merged_from"][1].endswith("p1.json"))' "$d/all.json")
        [ "$out" = "0n 0o 1n 1o 2n 2o 3n 3o 2 False True" ] || bad "merged JSON: $out"
    fi
    [ "$(cut -d, -f3,11 "$d/all.csv" | tr '\n' ' ')" = "impl,case naive,0 opt,0 naive,1 opt,1 naive,2 opt,2 naive,3 opt,3 " ] ||
        bad "merged CSV: $(cat "$d/all.csv")"
    [ "$(wc -l < "$d/all.csv")" = 9 ] && [ -z "$(tail -c 1 "$d/all.csv")" ] || bad "merged CSV: not 9 whole lines"
    [ ! -e "$d/all.csv.tmp" ] || bad "the CSV's temporary left beside it"
    done_test "merge: two shards in case order, JSON and CSV, exit 0"

    # a part whose writer was killed after flushing CSV rows its JSON (rewritten
    # less often) does not hold: those rows are left out, said; a CSV short of
    # its JSON's rows is still refused
    cp "$d/p1.json" "$d/p1k.json"
    { cat "$d/p1.csv"; echo "rope,fwd,bulk,bf16,sbhd,100,0.4,250,25,1000,1"; } >"$d/p1k.csv"
    run merge -o "$d/killed.json" --csv "$d/killed.csv" "$d/p0.json" "$d/p1k.json"
    expect_rc 0
    expect_err_has "p1k.csv: 1 row past" "left out"
    cmp -s "$d/all.csv" "$d/killed.csv" || bad "the CSV with the row past its JSON's: $(cat "$d/killed.csv")"
    head -n 4 "$d/p1.csv" >"$d/p1k.csv"
    run merge -o "$d/killed.json" --csv "$d/killed.csv" "$d/p0.json" "$d/p1k.json"
    expect_rc 2
    expect_err_has "p1k.csv: 3 rows, " "p1k.json 4"
    done_test "merge: CSV rows past the JSON's left out and said; fewer refused"

    # outputs in directories that do not exist yet (kb_output_check lets them through): created
    run merge -o "$d/new/a/all.json" --csv "$d/new/b/all.csv" "$d/p0.json" "$d/p1.json"
    expect_rc 0
    cmp -s "$d/all.json" "$d/new/a/all.json" || bad "the JSON in a new directory differs from all.json"
    cmp -s "$d/all.csv" "$d/new/b/all.csv" || bad "the CSV in a new directory differs from all.csv"
    [ -z "$(ls "$d/new/a" | grep -v '^all.json$')" ] || bad "left beside it: $(ls "$d/new/a")"
    done_test "merge: -o and --csv in new directories are created"

    run merge -o "$d/half.json" "$d/p0.json"
    expect_rc 1
    expect_err_has "1 of 2 shards missing: 1" "2 of 4 cases have no row: 1, 2"
    [ -s "$d/half.json" ] || bad "no merge written"
    done_test "merge: a missing shard and its cases are listed, exit 1, the merge written"

    cp "$d/p0.json" "$d/p0again.json"
    run merge -o "$d/dup.json" "$d/p0.json" "$d/p1.json" "$d/p0again.json"
    expect_rc 0
    expect_err_has "p0again.json is shard 0/2 again" "left out"
    done_test "merge: a shard given twice is left out, said on stderr"

    merge_part "$d/p1h200.json" 00000000000000aa 1/2 H200 2 1
    run merge -o "$d/mixed.json" "$d/p0.json" "$d/p1h200.json"
    expect_rc 0
    expect_err_has "note:" "H200" "H100"
    done_test "merge: parts from other GPU models are noted"

    merge_part "$d/other.json" 00000000000000bb 1/2 H100 2 1
    usage_error "merge: parts of different sweeps exit 2" merge -o "$d/x.json" "$d/p0.json" "$d/other.json" -- "are different sweeps"
    merge_part "$d/whole.json" 00000000000000aa "" H100 0 1 2 3
    usage_error "merge: parts of different splits exit 2" merge -o "$d/x.json" "$d/p0.json" "$d/whole.json" -- "parts of one split only"
    echo "{" >"$d/bad.json"
    usage_error "merge: a file that is not JSON exits 2" merge -o "$d/x.json" "$d/p0.json" "$d/bad.json" -- "bad.json: not JSON"
    usage_error "merge: -o is required" merge "$d/p0.json" -- "-o ALL.json is required"
    run merge -o "$d/w.json" "$d/whole.json"
    expect_rc 0
    done_test "merge: a whole (unsharded) run merges as itself"

    # a case in two shards: the JSON and the CSV both keep its first rows only
    merge_part "$d/q0.json" 00000000000000aa 0/2 H100 0 3 1
    merge_part "$d/q1.json" 00000000000000aa 1/2 H100 1 2
    run merge -o "$d/q.json" --csv "$d/q.csv" "$d/q0.json" "$d/q1.json"
    expect_rc 0
    expect_err_has "2 row(s) of a case and implementation already merged: left out"
    [ "$(grep -c '' "$d/q.csv")" -eq 9 ] || bad "CSV: $(grep -c '' "$d/q.csv") lines, want 9 (header, 8 rows as the JSON)"
    done_test "merge: rows left out of the JSON are left out of the CSV"

    # --devices workers' parts (kbench.worker), unsharded: complementary, not the same shard twice
    merge_part "$d/w0.json" 00000000000000aa "" H100 0 2
    merge_part "$d/w1.json" 00000000000000aa "" H100 1 3
    sed -i 's/"sweep_cases": 4/"sweep_cases": 4, "worker": 0/' "$d/w0.json"
    sed -i 's/"sweep_cases": 4/"sweep_cases": 4, "worker": 1/' "$d/w1.json"
    run merge -o "$d/wm.json" "$d/w0.json" "$d/w1.json"
    expect_rc 0
    expect_stderr_lines 0
    if have_python3; then
        out=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join("%d:%d" % (r["case"], r["gpu"]) for r in d["results"] if r["impl"] == "opt"))' "$d/wm.json")
        [ "$out" = "0:0 1:1 2:0 3:1" ] || bad "rows and their GPU: $out"
    fi
    done_test "merge: --devices workers' parts are complementary, each row says its GPU"

    # a worker that ended: the parent's part of error rows (no kbench.worker) names the GPU in each row
    merge_part "$d/w1a.json" 00000000000000aa "" H100 1
    sed -i 's/"sweep_cases": 4/"sweep_cases": 4, "worker": 1/; s/"name": "H100"/"name": "H100", "uuid": "GPU-1111"/' "$d/w1a.json"
    merge_part "$d/w0u.json" 00000000000000aa "" H100 0 2
    sed -i 's/"sweep_cases": 4/"sweep_cases": 4, "worker": 0, "start_s": 5.25, "start_parts_s": {"device": 0.5, "copy": 0.75, "first_case": 1, "ladders": 3}, "ladder_wait_s": 0.5/; s/"name": "H100"/"name": "H100", "uuid": "GPU-0000"/' "$d/w0u.json"
    printf '{"kbench": {"version": "0.1.0", "git_commit": "abc", "sweep_id": "00000000000000aa", "sweep_cases": 4},\n "results": [%s, %s]}\n' \
        '{"op": "rope", "case": 3, "impl": "naive", "params": {"seq": 300}, "error": "the worker on GPU 1 ended (signal 9) during this case", "gpu": 1}' \
        '{"op": "rope", "case": 3, "impl": "opt", "params": {"seq": 300}, "error": "the worker on GPU 1 ended (signal 9) during this case", "gpu": 1}' >"$d/ended.json"
    run merge -o "$d/em.json" "$d/w0u.json" "$d/w1a.json" "$d/ended.json"
    expect_rc 0
    if have_python3; then
        out=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join("%d:%s:%s:%s" % (r["case"], r.get("gpu"), r.get("gpu_uuid"), "error" in r) for r in d["results"] if r["impl"] == "opt"))' "$d/em.json")
        [ "$out" = "0:0:GPU-0000:False 1:1:GPU-1111:False 2:0:GPU-0000:False 3:1:GPU-1111:True" ] || bad "rows, their GPU and UUID: $out"
    fi
    done_test "merge: an ended worker's error rows keep their GPU and get its UUID"
    if have_python3; then
        out=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([x.get("start_s") for x in d["devices"]], "start_s" in d["kbench"], [x.get("start_parts_s", {}).get("ladders") for x in d["devices"]], "start_parts_s" in d["kbench"], [x.get("ladder_wait_s") for x in d["devices"]], "ladder_wait_s" in d["kbench"])' "$d/em.json")
        [ "$out" = "[5.25, None, None] False [3, None, None] False [0.5, None, None] False" ] || bad "each part's start_s in its devices entry: $out"
    fi
    done_test "merge: each part's start (kbench.start_s) is kept in its devices entry"

    # a case the run had no implementation for (kbench.skipped_cases) is not missing
    merge_part "$d/k.json" 00000000000000aa "" H100 0 1 2
    sed -i 's/"sweep_cases": 4/"sweep_cases": 4, "skipped_cases": [3]/' "$d/k.json"
    run merge -o "$d/km.json" "$d/k.json"
    expect_rc 0
    expect_stderr_lines 0
    done_test "merge: a case skipped for --impl is not missing"

    # the Slurm scripts, their array simulated (SLURM_ARRAY_TASK_ID/COUNT): the
    # merged plan of a --dry-run array is the unsharded plan
    local sd=$T/slurm k
    mkdir -p "$sd"
    echo stale >"$sd/shard-2.json" # an earlier real run's part: a --dry-run task takes it away
    echo stale >"$sd/shard-2.csv"
    for k in 0 1 2 3; do
        SLURM_ARRAY_TASK_ID=$k SLURM_ARRAY_TASK_COUNT=4 KBENCH=$KBENCH scripts/slurm/kbench-sweep.sbatch configs/ci.json "$sd" --dry-run ||
            bad "kbench-sweep.sbatch task $k failed"
    done
    KBENCH=$KBENCH scripts/slurm/kbench-merge.sbatch configs/ci.json "$sd" >"$T/out" 2>"$T/err" || bad "kbench-merge.sbatch failed: $(cat "$T/err")"
    run sweep configs/ci.json --dry-run
    grep -E '^ +[0-9]+  ' "$T/out" | cmp -s - "$sd/all.plan" || bad "the merged plan of 4 shards is not the sweep's"
    [ -e "$sd/shard-2.json" ] || [ -e "$sd/shard-2.csv" ] && bad "a --dry-run task left an earlier run's shard-2.json/csv"
    done_test "slurm: a --dry-run array of 4 tasks, merged, is the unsharded plan (the array simulated)"
}

cli_run_all() {
    cli_help
    cli_list
    cli_usage_errors
    cli_json_errors
    cli_dry_runs
    cli_device
    cli_mlp
    cli_compare
    cli_merge
    cli_cmdline
    cli_plugins
    cli_compare_fifo
    # tests/cli-TOPIC.sh: more CLI tests, one file a topic; each adds the
    # names of its test functions to cli_more
    local f t
    cli_more=()
    for f in "$root"/tests/cli-*.sh; do
        [ -e "$f" ] || continue
        # shellcheck disable=SC1090
        . "$f"
    done
    for t in "${cli_more[@]}"; do "$t"; done
}
