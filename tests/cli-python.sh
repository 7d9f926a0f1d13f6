# CLI tests of Python implementations (issue 44), sourced by tests/cli.sh: a
# .py file named where a plugin library would be. No GPU: loading, the
# declarations, supports() and coverage. Skipped where python3 has no
# shared libpython (kbench loads it at run time).

python_ok() { # whether kbench can start Python here
    "$KBENCH" plugin info tests/python/host_stub.py >/dev/null 2>&1
}

cli_python_refusals() {
    python_ok || { t_skip "cli: Python implementations (python3 with a shared libpython: none here)"; return; }
    local spec
    for spec in "bad_syntax|bad_syntax.py:1: SyntaxError" "bad_import|bad_import.py:1: ModuleNotFoundError" \
        "no_launch|implementation 'x' (rope) has no launch function" "no_kbench|no KBENCH list of implementations" \
        "bad_writes|writes names 'rstdd', not an output of rmsnorm"; do
        usage_error "python: plugin info refuses ${spec%%|*}.py" plugin info "tests/python/${spec%%|*}.py" -- "${spec#*|}"
    done
    usage_error "python: --impl NAME=FILE.py refuses before the GPU" layernorm --impl x=tests/python/bad_syntax.py \
        -- "SyntaxError"
    usage_error "python: no such interpreter" layernorm --impl x=tests/python/host_stub.py --python "$T/no-python" \
        --dry-run -- "no Python interpreter '$T/no-python'"
}

cli_python_load() {
    python_ok || { t_skip "cli: Python implementations (no shared libpython)"; return; }
    run plugin info tests/python/host_stub.py
    expect_rc 0
    expect_out_has "layernorm  double" "y = 2 x (a test)"
    run plugin info tests/python/host_stub.py --cases configs/ci.json
    expect_rc 0
    expect_out_has "takes 12 of 72 cases; refuses:" "fp32 forward only"
    run layernorm --rows 13 --dtype fp32 --impl tests/python/host_stub.py --dry-run
    expect_rc 0
    printf 'def launch(case, tensors, stream):\n    pass\nKBENCH = [dict(op="rmsnorm", name="t", launch=launch, tunables={"block": ([64, 128], 128)})]\n' >"$T/tun.py"
    run list rmsnorm --plugin "t=$T/tun.py"
    expect_rc 0
    expect_out_has "block {auto,64,128}"
    run rmsnorm --impl "t=$T/tun.py" --block 64,128 --dry-run
    expect_rc 0
    expect_out_has "2 cases"
    printf '{"settings": {"python": "python3", "plugins": {"t": "tun.py"}}, "sweeps": [{"op": "rmsnorm", "block": [64, 128]}]}\n' >"$T/py.json"
    run sweep "$T/py.json" --dry-run
    expect_rc 0
    done_test "python: a .py file's implementations load, list, take flags and sweep keys; supports() on every case"
}

# The library wrappers where their library is missing (TransformerEngine and
# QuACK on the test GPU, which cannot install them; all four where torch is
# missing, as in CI): every case refused, naming the import error. python3 on
# PATH is the interpreter kbench loads (docs/python.md).
cli_python_wrappers_na() {
    python_ok || { t_skip "cli: Python implementations (no shared libpython)"; return; }
    local w f mod name checked=
    for w in te_ops:transformer_engine:transformer_engine quack_ops:quack:quack liger_ops:liger_kernel:liger-kernel \
        flashinfer_ops:flashinfer:flashinfer; do
        IFS=: read -r f mod name <<<"$w"
        python3 -c "import torch, $mod" >/dev/null 2>&1 && continue # installed here: the GPU checks are its tests
        run plugin info "examples/python/$f.py" --cases configs/ci.json
        expect_rc 0
        expect_out_has "takes 0 of" "$name not importable: "
        grep -E "takes [1-9][0-9]* of" "$T/out" >/dev/null && bad "$f.py takes a case without $mod"
        checked+=" $f"
    done
    [ -n "$checked" ] || { t_skip "cli: python: the library wrappers' n/a path (all four libraries installed here)"; return; }
    done_test "python: the library wrappers refuse every case, naming the import error, where the library is missing (${checked# })"
}

# On a GPU with torch and triton: tests/python/gpu_faults.py's four, each
# costing its own rows (an exception, wrong numbers, a fault in the helper,
# a launch that cannot be captured under graphs falling back to events),
# beside kbench's own rows, which pass.
cli_python_gpu() {
    if ! nvidia-smi -L >/dev/null 2>&1 || ! python3 -c "import torch, triton" >/dev/null 2>&1 || ! python_ok; then
        t_skip "cli: Python implementations on the GPU (no GPU, or no torch and triton)"
        return
    fi
    run layernorm --rows 7 --cols 200 --dtype fp32 --affine none --pass fwd --timing graph \
        --impl naive,f=tests/python/gpu_faults.py,opt --csv "$T/py.csv" --json "$T/py.json"
    expect_rc 3
    expect_err_has "f.syncs cannot be captured in a CUDA graph"
    [ "$(grep -c '^' "$T/py.csv")" -eq 7 ] || bad "want 6 rows and a header in the CSV, got $(grep -c '^' "$T/py.csv") lines"
    [ "$(grep -c 'gpu_faults.py:[0-9]*: RuntimeError: this launch raises' "$T/py.csv")" -eq 1 ] || bad "raises: no error row with its line"
    [ "$(grep -c '^layernorm,.*f\.wrong.*,fail,' "$T/py.csv")" -eq 1 ] || bad "wrong: no FAIL row"
    [ "$(grep -c 'plugin f.faults (tests/python/gpu_faults.py).*illegal' "$T/py.csv")" -eq 1 ] || bad "faults: no isolated error row"
    [ "$(grep -c 'f\.syncs,.*,events,.*,no graph,.*,pass,' "$T/py.csv")" -eq 1 ] || bad "syncs: not passed and timed with events"
    [ "$(grep -c '^layernorm,.*,pass,' "$T/py.csv")" -eq 3 ] || bad "naive, opt and syncs did not all pass"
    done_test "python on the GPU: an exception, wrong numbers, a fault and an uncapturable launch each cost their own rows"
}

# examples/python/torch_ops.py raises dynamo's recompile limits on import
# (16cb710: past the default 8 a code object, torch.compile ran an op's later
# cases eagerly under its name) and makes a hit an error: checked against a
# stand-in torch of each naming (torch >= 2.6: recompile_limit; older:
# cache_size_limit), so CI, which has no torch, checks it too.
cli_python_torch_limits() {
    have_python3 || { done_test "python: torch_ops.py raises torch.compile's recompile limits"; return; }
    local v dir out
    last_args=("(none: python3 imports examples/python/torch_ops.py under a stand-in torch)")
    : >"$T/err"
    for v in "recompile_limit accumulated_recompile_limit fail_on_recompile_limit_hit"         "cache_size_limit accumulated_cache_size_limit"; do
        dir="$T/faketorch-${v%% *}"
        mkdir -p "$dir/torch/_dynamo" "$dir/torch/nn"
        printf 'from . import nn\n' >"$dir/torch/__init__.py"
        : >"$dir/torch/nn/__init__.py"
        : >"$dir/torch/nn/functional.py"
        printf 'from . import config\n' >"$dir/torch/_dynamo/__init__.py"
        set -- $v
        { echo "$1 = 8"; echo "$2 = 256"; [ -n "${3:-}" ] && echo "$3 = False"; } >"$dir/torch/_dynamo/config.py"
        out=$(PYTHONPATH="$dir" python3 -c "
import importlib.util
s = importlib.util.spec_from_file_location('torch_ops', 'examples/python/torch_ops.py')
s.loader.exec_module(importlib.util.module_from_spec(s))
import torch._dynamo.config as c
print(c.$1, c.$2, getattr(c, 'fail_on_recompile_limit_hit', '-'))" 2>&1)
        case "$v" in
        *fail_on*) [ "$out" = "65536 65536 True" ] || bad "torch_ops.py with $1: '$out', want '65536 65536 True'" ;;
        *) [ "$out" = "65536 65536 -" ] || bad "torch_ops.py with $1: '$out', want '65536 65536 -'" ;;
        esac
    done
    done_test "python: torch_ops.py raises torch.compile's recompile limits (either name) and makes a hit an error"
}

cli_more+=(cli_python_refusals cli_python_load cli_python_wrappers_na cli_python_gpu cli_python_torch_limits)
