# CLI tests of issue 45's faults of input and output (sourced by tests/cli.sh):
# broken plugin libraries, long output paths, standard output that fails.

# ---- plugins that are not plugins: one line, exit 2, no crash ----------------

# faults_plugin_refused NAME LIB TEXT...: plugin info, --plugin and --impl all refuse LIB
faults_plugin_refused() {
    local name=$1 lib=$2
    shift 2
    usage_error "plugin info refuses $name" plugin info "$lib" -- "$lib" "$@"
    usage_error "--plugin x=LIB --dry-run refuses $name" layernorm --plugin x="$lib" --dry-run -- "$lib" "$@"
    usage_error "--impl x=LIB --dry-run refuses $name" layernorm --impl x="$lib" --dry-run -- "$lib" "$@"
}

cli_faults_plugin_files() {
    if ! command -v gcc >/dev/null 2>&1; then
        t_skip "cli: broken plugin libraries (no gcc)"
        return
    fi
    local d=$T/faults-plugins
    mkdir -p "$d"
    gcc -shared -fPIC -Iinclude tests/plugins/noop.c -o "$d/noop.so" || { bad "gcc failed"; done_test "build"; return; }
    # a plugin cut short: its segments reach past the end of the file (SIGBUS in dlopen before)
    head -c 3000 "$d/noop.so" >"$d/cut.so"
    faults_plugin_refused "a truncated library" "$d/cut.so" "cannot load it as a shared library" "truncated"
    local libm=/usr/lib/x86_64-linux-gnu/libm.so.6
    if [ -f "$libm" ]; then
        head -c 3000 "$libm" >"$d/libm-cut.so"
        faults_plugin_refused "a truncated libm" "$d/libm-cut.so" "cannot load it as a shared library"
    fi
    head -c 40 "$d/noop.so" >"$d/head.so" # the ELF header itself cut
    faults_plugin_refused "an ELF header cut short" "$d/head.so" "cannot load it as a shared library"
    # an entry point that is a data symbol (SIGSEGV when called before)
    echo 'int kbench_plugin = 5;' | gcc -shared -fPIC -x c - -o "$d/data.so"
    faults_plugin_refused "a data symbol as the entry point" "$d/data.so" "kbench_plugin is not a function"
    # the valid library still loads
    run plugin info "$d/noop.so"
    expect_rc 0
    expect_out_has "layernorm" "noop"
    done_test "plugin info: a whole library still loads"
}

# ---- output paths are never cut ----------------------------------------------

# faults_long_dir BASE LEN: prints a directory under BASE whose path is LEN
# characters (names of 200 at most), made
faults_long_dir() {
    local d=$1 want=$2 n200
    n200=$(printf '%0200d' 0)
    while [ $((want - ${#d})) -gt 201 ]; do d="$d/$n200"; done
    d="$d/$(printf '%0*d' $((want - ${#d} - 1)) 0)"
    mkdir -p "$d" && echo "$d"
}

cli_faults_long_paths() {
    local d=$T/faults-long D L
    mkdir -p "$d"
    merge_part "$d/p0.json" 00000000000000aa 0/2 H100 3 0
    merge_part "$d/p1.json" 00000000000000aa 1/2 H100 2 1
    # PATH.tmp was cut to 1099 characters: DIR/keepXYZ.json.tmp became DIR/keep,
    # overwritten, then renamed to DIR/keepXYZ.json
    D=$(faults_long_dir "$d" 1094)
    echo precious >"$D/keep"
    run merge -o "$D/keepXYZ.json" "$d/p0.json" "$d/p1.json"
    expect_rc 0
    [ "$(cat "$D/keep" 2>/dev/null)" = precious ] || bad "$D/keep was touched"
    python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))["results"]) == 8' "$D/keepXYZ.json" 2>/dev/null ||
        bad "the merged JSON is not at its path"
    done_test "merge -o: a path of 1100 characters is written whole, nothing beside it touched"

    # directories made along a long path are the path's, not a cut of it
    run merge -o "$D/new/sub/all.json" --csv "$D/new/csv/all.csv" "$d/p0.json" "$d/p1.json"
    expect_rc 0
    [ -s "$D/new/sub/all.json" ] && [ -s "$D/new/csv/all.csv" ] || bad "not written: $(ls "$D/new" 2>&1)"
    [ "$(ls "$D/new" | tr '\n' ' ')" = "csv sub " ] || bad "other directories made: $(ls "$D/new" | tr '\n' ' ')"
    done_test "merge: new directories under a long path are made whole"

    # past PATH_MAX (4096 with its NUL), PATH.tmp included: refused before
    # anything is written, the reason at the end of the line
    L=$(faults_long_dir "$d" 4086)
    run merge -o "$L/all.json" "$d/p0.json" "$d/p1.json"
    expect_rc 2
    expect_stderr_lines 1
    expect_err_has "too long"
    [ -z "$(ls "$L")" ] || bad "written: $(ls "$L")"
    done_test "merge -o: a path whose temporary would pass PATH_MAX is refused, one line"
    run merge -o "$d/all.json" --csv "$L/x/all.csv" "$d/p0.json" "$d/p1.json"
    expect_rc 2
    expect_stderr_lines 1
    expect_err_has "too long"
    [ ! -e "$d/all.json" ] && [ -z "$(ls "$L")" ] || bad "written: $(ls "$d" "$L")"
    done_test "merge --csv: a path past PATH_MAX is refused before -o is written"

    # --json, --csv, --out-dir take a path up to PATH_MAX (1023 characters before)
    D=$(faults_long_dir "$d" 1500)
    run rope --seq 16 --json "$D/r.json" --csv "$D/r.csv" --dry-run
    expect_rc 0
    done_test "--json and --csv of 1500 characters are taken"
    run rope --seq 16 --out-dir "$D" --dry-run
    expect_rc 0
    done_test "--out-dir of 1500 characters is taken"
    run rope --seq 16 --json "$L/r.json" --dry-run
    expect_rc 2
    expect_stderr_lines 1
    expect_err_has "--json" "too long"
    done_test "--json past PATH_MAX (with its temporary) is refused, one line"
    run rope --seq 16 --out-dir "$L" --dry-run
    expect_rc 2
    expect_stderr_lines 1
    expect_err_has "too long"
    done_test "--out-dir whose default outputs pass PATH_MAX is refused, one line"
    run rope --seq 16 --csv "$L/$(printf '%04000d' 0)" --dry-run
    expect_rc 2
    expect_stderr_lines 1
    expect_err_has "--csv" "too long"
    done_test "--csv longer than PATH_MAX is refused, one line"

    run compare tests/data/compare/base.json tests/data/compare/new.json --csv "$L/cmp.csv"
    expect_rc 2
    expect_stderr_lines 1
    expect_err_has "--csv" "too long"
    [ -s "$T/out" ] && bad "compared anyway"
    done_test "compare --csv past PATH_MAX is refused before comparing"
}

# ---- standard output that fails: one line, exit 2 ----------------------------

# faults_full ARGS...: kbench ARGS >/dev/full; $rc, $T/err
faults_full() { last_args=("$@" ">/dev/full"); "$KBENCH" "$@" >/dev/full 2>"$T/err"; rc=$?; }
# faults_closed ARGS...: kbench ARGS with stdout closed
faults_closed() { last_args=("$@" ">&-"); "$KBENCH" "$@" >&- 2>"$T/err"; rc=$?; }

faults_stdout_refused() { # NAME
    expect_rc 2
    expect_stderr_lines 1
    expect_err_has "kbench: cannot write to standard output"
    done_test "$1"
}

cli_faults_stdout() {
    local d=$T/faults-stdout
    mkdir -p "$d"
    merge_part "$d/p0.json" 00000000000000aa 0/2 H100 3 0
    merge_part "$d/p1.json" 00000000000000aa 1/2 H100 2 1
    faults_closed list
    faults_stdout_refused "list with stdout closed: exit 2"
    faults_closed rope --seq 16 --dry-run
    faults_stdout_refused "a dry run with stdout closed: exit 2"
    if [ ! -w /dev/full ]; then
        t_skip "cli: standard output on /dev/full (no /dev/full)"
        return
    fi
    faults_full list
    faults_stdout_refused "list >/dev/full: exit 2"
    faults_full --help
    faults_stdout_refused "--help >/dev/full: exit 2"
    faults_full --version
    faults_stdout_refused "--version >/dev/full: exit 2"
    faults_full merge -o "$d/all.json" "$d/p0.json" "$d/p1.json"
    faults_stdout_refused "merge >/dev/full: exit 2"
    faults_full compare tests/data/compare/base.json tests/data/compare/new.json
    faults_stdout_refused "compare >/dev/full: exit 2, not 4 with no word"
    faults_full rope --seq 1:4096:1 --dry-run
    faults_stdout_refused "a 4096-case dry run >/dev/full: exit 2"
    faults_full plugin --help
    faults_stdout_refused "plugin --help >/dev/full: exit 2"
}

cli_more+=(cli_faults_plugin_files cli_faults_long_paths cli_faults_stdout)
