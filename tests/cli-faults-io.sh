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

cli_more+=(cli_faults_plugin_files)
