# CLI tests of the plugin contract's naming and coverage (issue 43), sourced
# by tests/cli.sh: a library of several implementations (tests/plugins/two.c:
# layernorm "fast" and "safe", rmsnorm "rms") named by --impl.

plugins_v2_dir() { # the test plugins' directory, or "" (skipped)
    local P=${KB_TEST_PLUGINS:-build/tests/plugins}
    [ -f "$P/two.so" ] && echo "$P"
}

# --impl NAME=LIB selects every implementation LIB has of the sweep's ops
# (NAME.fast, NAME.safe; NAME for rmsnorm's one); --impl LIB names them after
# the file; NAME of a library with none of the sweep's ops is refused
cli_plugin_naming() {
    local P
    P=$(plugins_v2_dir) || { t_skip "cli: plugin naming (no $KB_TEST_PLUGINS/two.so: make test-plugins)"; return; }
    run layernorm --rows 7 --cols 300 --impl naive,mine="$P/two.so" --dry-run
    expect_rc 0
    run rmsnorm --rows 7 --cols 300 --impl mine="$P/two.so" --dry-run
    expect_rc 0
    run layernorm --rows 7 --impl "$P/two.so" --dry-run
    expect_rc 0
    run layernorm --rows 7 --impl two.safe,"$P/two.so" --dry-run
    expect_rc 0
    run mlp --impl mine="$P/two.so" --dry-run
    expect_rc 2
    expect_stderr_lines 1
    expect_err_has "no implementation 'mine' in this sweep"
    run layernorm --rows 7 --impl mine.fastest,mine="$P/two.so" --dry-run
    expect_rc 2
    expect_err_has "no implementation 'mine.fastest'" "did you mean 'mine.fast'"
    run layernorm --rows 7 --impl naive="$P/two.so" --dry-run # NAME would select the built-in naive too
    expect_rc 2
    expect_err_has "'naive' is a built-in implementation"
    done_test "plugin: --impl NAME=LIB selects all of LIB's implementations; --impl LIB names them after the file"
}

# plugin info LIB --cases SWEEP: each implementation's take of the sweep by
# its supports(), with the reasons it refuses the rest; no GPU
cli_plugin_coverage() {
    local P E=${KB_EXAMPLES:-build/examples}
    P=$(plugins_v2_dir) || { t_skip "cli: plugin coverage (no two.so)"; return; }
    run plugin info "$P/two.so" --cases configs/ci.json
    expect_rc 0
    expect_out_has "coverage of configs/ci.json" "layernorm  fast" "layernorm  safe" "takes 72 of 72 cases" "takes 8 of 8 cases"
    if [ -f "$E/libkb_rope_gptj.so" ]; then
        run plugin info "$E/libkb_rope_gptj.so" --cases configs/ci.json
        expect_rc 0
        expect_out_has "takes 48 of 100 cases; refuses:" "52  style neox"
    fi
    run plugin info "$P/two.so" --cases "$T/no-such.json"
    expect_rc 2
    expect_stderr_lines 1
    [ -s "$T/out" ] && bad "the library's table printed before the sweep was refused"
    run plugin info "$P/two.so" --case configs/ci.json
    expect_rc 2
    expect_stderr_lines 1
    done_test "plugin info --cases: what each implementation takes of a sweep, and why not the rest"
}

cli_more+=(cli_plugin_naming cli_plugin_coverage)

# kbench check --shapes FILE: the file's cases instead of check's own (the
# ops named among them); a bad file or none of the ops named: exit 2
cli_check_shapes() {
    run check --shapes configs/ci.json --dry-run
    expect_rc 0
    expect_out_has "187 cases"
    run check layernorm --shapes configs/ci.json --dry-run
    expect_rc 0
    expect_out_has "72 cases"
    usage_error "check --shapes: a missing file" check --shapes "$T/none.json" --dry-run -- "--shapes:" "not found"
    usage_error "check --shapes: no file" check --shapes -- "option '--shapes' needs a value"
    printf '{"sweeps": [{"op": "rope", "seq": 5}]}\n' >"$T/rope-only.json"
    usage_error "check --shapes: none of the ops named" check mlp --shapes "$T/rope-only.json" --dry-run -- "no case of the ops named"
    local P
    if P=$(plugins_v2_dir) && [ -f "$P/refuse_all.so" ]; then
        run plugin info "$P/refuse_all.so" --cases configs/ci.json
        expect_rc 0
        expect_out_has "takes 0 of 72 cases; refuses:" "rows a multiple of 4096 only"
    fi
    done_test "check --shapes SWEEP: the user's shapes; plugin info --cases says a picky plugin takes none of them"
}

cli_more+=(cli_check_shapes)

# ABI 2: a plugin's own tunable (tests/plugins/tunable.c: layernorm "tiled",
# rows_per_block 1,2,4, default 2) is a parameter of its op while loaded: a
# flag, a sweep key, a --set axis, a line of list; its supports() sees the
# default at auto; kbench's own tunables fixed are n/a for it; another
# plugin may not declare it with other values
cli_plugin_tunables() {
    local P
    P=$(plugins_v2_dir) || { t_skip "cli: plugin tunables (no tunable.so)"; return; }
    run list layernorm --plugin t="$P/tunable.so"
    expect_rc 0
    expect_out_has "rows_per_block {auto,1,2,4}" "(tunable) t's tunable" "[tunables: rows_per_block]"
    run list layernorm
    grep -q rows_per_block "$T/out" && bad "list shows a plugin's tunable with no plugin loaded"
    run layernorm --rows 1,4 --cols 64 --impl opt,t="$P/tunable.so" --rows-per-block auto,1,4 --dry-run
    expect_rc 0
    expect_out_has "6 cases" "rows_per_block=4"
    usage_error "a plugin's tunable: a value it lacks" layernorm --impl t="$P/tunable.so" --rows-per-block 3 --dry-run \
        -- "rows_per_block"
    usage_error "no plugin, no tunable flag" layernorm --rows-per-block 2 --dry-run -- "unknown option '--rows-per-block'"
    printf '{"settings": {"plugins": {"t": "%s"}}, "sweeps": [{"op": "layernorm", "rows": [1, 4], "cols": 64, "rows_per_block": ["auto", 1, 4], "vec": ["auto", 2]}]}\n' \
        "$(realpath "$P/tunable.so")" >"$T/tun.json"
    run sweep "$T/tun.json" --dry-run
    expect_rc 0
    expect_out_has "12 cases"
    run sweep configs/layernorm.json --plugin t="$P/tunable.so" --set rows_per_block=1,2 --dry-run
    expect_rc 0
    run plugin info "$P/tunable.so" --cases "$T/tun.json"
    expect_rc 0
    expect_out_has "tunable rows_per_block: --rows-per-block 1,2,4 (auto: 2)" "takes 4 of 12 cases; refuses:" \
        "rows_per_block 2 > rows 1" "rows_per_block 4 > rows 1" "tiled takes no vec (vec=2; auto for it)"
    run layernorm --impl a="$P/tunable.so",b="$P/tunable_other.so" --dry-run
    expect_rc 2
    expect_stderr_lines 1
    expect_err_has "tunable 'rows_per_block' of layernorm has values 1,8; a plugin loaded before declares it with 1,2,4"
    done_test "plugin: its own tunables are flags, sweep keys and list lines; supports() sees the default at auto"
}

# ABI 2's declarations: plugin info shows them
cli_plugin_declarations() {
    local P
    P=$(plugins_v2_dir) || { t_skip "cli: plugin declarations (no inplace.so)"; return; }
    run plugin info "$P/inplace.so"
    expect_rc 0
    expect_out_has "rot_inplace" "in place: out=t" "bwd_accum" "accumulates into: dx,dgamma,dbeta"
    done_test "plugin info: in place and accumulating outputs"
}

cli_more+=(cli_plugin_tunables cli_plugin_declarations)

# On a GPU only: isolation (--isolate auto, the default). The faulty
# plugin's oob loses its helper's context: its rows are errors naming it,
# every other row is there, the exit is 3. (The hang takes the helper's
# watchdog, 2 x --timeout + 60 s: scripts/gpu-plugins.sh isolated.)
cli_plugin_isolation() {
    local P=${KB_TEST_PLUGINS:-build/tests/plugins}
    if ! nvidia-smi -L >/dev/null 2>&1 || [ ! -f "$P/libfaulty.so" ]; then
        t_skip "cli: plugin isolation (no GPU, or no libfaulty.so)"
        return
    fi
    run layernorm --rows 7,300 --cols 200 --dtype fp32 --affine none --pass fwd --impl naive,oob,off_by_one,opt \
        --plugin "$P/libfaulty.so" --csv "$T/iso.csv" --json "$T/iso.json"
    expect_rc 3
    [ "$(grep -c '^' "$T/iso.csv")" -eq 9 ] || bad "want 8 rows and a header in the CSV, got $(grep -c '^' "$T/iso.csv") lines"
    [ "$(grep -c 'plugin oob (' "$T/iso.csv")" -eq 2 ] || bad "the two oob rows do not name the plugin"
    [ "$(grep -c ',pass,' "$T/iso.csv")" -ge 4 ] || bad "naive and opt did not pass on both cases"
    run layernorm --rows 7,300 --cols 200 --dtype fp32 --affine none --pass fwd --impl naive,oob,opt --isolate off \
        --plugin "$P/libfaulty.so" --csv "$T/off.csv" --json "$T/off.json"
    expect_rc 3
    expect_err_has "the GPU context is lost"
    done_test "plugin isolation: a faulting plugin costs its rows; --isolate off stops the sweep"
}

cli_more+=(cli_plugin_isolation)
