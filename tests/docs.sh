#!/usr/bin/env bash
# Tests of the commands in README.md, docs/*.md, examples/plugins/README.md and
# examples/python/README.md,
# so that the text cannot go stale. Sourced by tests/run.sh after tests/plot.sh (its helpers: t_pass,
# t_fail, t_skip, $T, $KBENCH, $root); `tests/docs.sh` alone runs it too.
#
# The docs' fenced blocks, by info string (docs/testing.md):
#   ```sh          commands that need no GPU: each is run, in a scratch copy
#                  of the repository's root (configs/, examples/, include/,
#                  scripts/, tests/ and results/curated/ linked in; `kbench`
#                  and `./kbench` are $KBENCH; build/examples is
#                  $KB_EXAMPLES), the blocks of one file in order in one
#                  scratch directory
#   ```sh gpu      commands that need a GPU, or the files a GPU run writes:
#                  each listed as skipped
#   ```sh long     commands that need no GPU but take minutes or root (make
#                  test, make fuzz, ...): each listed as skipped (CI runs them)
#   ```json sweep  a sweep file: `kbench sweep FILE --dry-run` must accept it
#   ```text, ```json, ...   output and file samples, not run
# A command is a line (a trailing \ joins the next); lines starting with #
# are comments. A command must exit 0, or N where its comment says `exits N`.
# A `make ...` command, in any sh block, is checked with `make -n` (the
# target exists and its recipe expands; nothing is built or run). A command
# that names build/examples/ is skipped where the examples are not built.
# A fenced block with no info string, or an sh block with another word than
# gpu or long, fails: every command must say where it can run.

# docs_make CMD: the make command CMD as make -n from the root
docs_make() {
    local c=${1%%#*}
    (cd "$root" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL bash -c "make -n ${c#make}") >"$T/docs.out" 2>"$T/docs.err"
}

# docs_scratch NAME: a fresh scratch root for one file's blocks; sets $dscratch
docs_scratch() {
    local d kb=$docs_kb
    dscratch=$T/docs-$1
    rm -rf "$dscratch"
    mkdir -p "$dscratch/bin" "$dscratch/results" "$dscratch/build"
    for d in configs examples include scripts tests refs kernels cli Makefile; do
        ln -s "$root/$d" "$dscratch/$d"
    done
    ln -s "$root/results/curated" "$dscratch/results/curated"
    ln -s "$docs_examples" "$dscratch/build/examples"
    ln -s "$kb" "$dscratch/kbench"
    ln -s "$kb" "$dscratch/bin/kbench"
}

# docs_command FILE LINE KIND CMD: one command of a block of kind sh, gpu or long
docs_command() {
    local file=$1 line=$2 kind=$3 cmd=$4 want=0 rc name
    name="docs: $file:$line: $cmd"
    [ ${#name} -gt 150 ] && name="${name:0:147}..."
    if [[ $cmd =~ \#.*exits[[:space:]]+([0-9]+) ]]; then want=${BASH_REMATCH[1]}; fi
    if [[ $cmd =~ ^make([[:space:]]|$) ]]; then
        docs_make "$cmd"
        rc=$?
        if [ "$rc" -eq 0 ]; then
            t_pass "$name (make -n)"
        else
            t_fail "$name (make -n)"
            echo "      make -n exit $rc: $(head -c 400 "$T/docs.err")"
        fi
        return
    fi
    if [ "$kind" != sh ]; then
        t_skip "$name ($kind)"
        return
    fi
    if [[ $cmd == *build/examples/* ]] && [ ! -f "$docs_examples/libkb_layernorm_plain.so" ]; then
        t_skip "$name (examples not built: make examples)"
        return
    fi
    local need="" # what only some tests need (scripts/deps.sh): a command of it skipped without it
    [[ $cmd == *plot.sh* || $cmd == *gnuplot* ]] && need=gnuplot
    [[ $cmd == *python3* ]] && need=python3
    if [ -n "$need" ] && ! command -v "$need" >/dev/null 2>&1; then
        t_skip "$name ($need not installed)"
        return
    fi
    (cd "$dscratch" && PATH="$dscratch/bin:$PATH" timeout 60 bash -c "$cmd") </dev/null >"$T/docs.out" 2>"$T/docs.err"
    rc=$?
    if [ "$rc" -eq "$want" ]; then
        t_pass "$name"
    else
        t_fail "$name"
        echo "      exit $rc, want $want (run in $dscratch)"
        echo "      stderr: $(head -c 600 "$T/docs.err")"
    fi
}

# docs_sweep_file FILE LINE TEXT: a ```json sweep block
docs_sweep_file() {
    local f=$dscratch/sweep-$2.json
    printf '%s\n' "$3" >"$f"
    (cd "$dscratch" && "$dscratch/kbench" sweep "$f" --dry-run) >"$T/docs.out" 2>"$T/docs.err"
    local rc=$?
    if [ "$rc" -eq 0 ]; then
        t_pass "docs: $1:$2: the sweep file passes kbench sweep --dry-run"
    else
        t_fail "docs: $1:$2: the sweep file passes kbench sweep --dry-run"
        echo "      exit $rc: $(head -c 600 "$T/docs.err")"
    fi
}

# docs_file FILE: every fenced block of FILE (a path from the root)
docs_file() {
    local file=$1 n=0 inblock=0 info='' start=0 text='' cmd='' cmdline=0 kind='' l
    docs_scratch "$(echo "$file" | tr '/.' '__')"
    while IFS= read -r l || [ -n "$l" ]; do
        n=$((n + 1))
        if [ $inblock -eq 0 ]; then
            if [[ $l =~ ^\`\`\`(.*)$ ]]; then
                info=${BASH_REMATCH[1]}
                info=${info#"${info%%[![:space:]]*}"}
                info=${info%"${info##*[![:space:]]}"}
                inblock=1 start=$n text='' cmd=''
                case $info in
                sh) kind='sh' ;;
                "sh gpu") kind=gpu ;;
                "sh long") kind=long ;;
                "json sweep") kind=sweep ;;
                "")
                    kind=none
                    t_fail "docs: $file:$n: a fenced block without an info string (sh, sh gpu, sh long, text, ...)"
                    ;;
                sh\ * | bash* | shell* | console*)
                    kind=none
                    t_fail "docs: $file:$n: info string '$info': commands go in sh, sh gpu or sh long blocks"
                    ;;
                *) kind=none ;;
                esac
            fi
            continue
        fi
        if [[ $l =~ ^\`\`\`[[:space:]]*$ ]]; then
            inblock=0
            [ "$kind" = sweep ] && docs_sweep_file "$file" "$start" "$text"
            [ -n "$cmd" ] && t_fail "docs: $file:$cmdline: a command ends in \\ at the end of its block"
            continue
        fi
        case $kind in
        sweep) text+="$l"$'\n' ;;
        sh | gpu | long)
            if [ -n "$cmd" ]; then cmd+=" ${l#"${l%%[![:space:]]*}"}"; else cmd=$l cmdline=$n; fi
            if [[ $cmd == *\\ ]]; then
                cmd=${cmd%\\}
                continue
            fi
            cmd=${cmd#"${cmd%%[![:space:]]*}"}
            [ -n "$cmd" ] && [[ $cmd != \#* ]] && docs_command "$file" "$cmdline" "$kind" "$cmd"
            cmd=
            ;;
        esac
    done <"$root/$file"
    [ $inblock -eq 0 ] || t_fail "docs: $file:$start: a fenced block that never closes"
}

# every relative link of the docs names a file or folder that exists
docs_links() {
    local f target missing=()
    for f in $docs_files; do
        while IFS= read -r target; do
            target=${target%%#*}
            [ -n "$target" ] || continue
            case $target in http:* | https:* | mailto:*) continue ;; esac
            [ -e "$root/$(dirname "$f")/$target" ] || missing+=("$f: $target")
        done < <(grep -oE '\]\([^)]+\)' "$root/$f" | sed 's/^](//; s/)$//; s/ .*//')
    done
    if [ ${#missing[@]} -eq 0 ]; then
        t_pass "docs: every relative link of the docs resolves"
    else
        t_fail "docs: every relative link of the docs resolves"
        for f in "${missing[@]}"; do echo "      missing: $f"; done
    fi
}

# the plugin build line: kbench plugin --help's, README's and docs/plugins.md's
# are one line, and the Makefile builds the examples with its flags
docs_plugin_line() {
    local line mk problems=()
    line=$("$docs_kb" plugin --help | grep -E '^ +nvcc ' | sed 's/^ *//')
    if [ -z "$line" ]; then
        problems+=("kbench plugin --help shows no nvcc line")
    else
        grep -qxF -- "$line" "$root/README.md" || problems+=("README.md lacks the line of plugin --help: $line")
        grep -qxF -- "$line" "$root/docs/plugins.md" || problems+=("docs/plugins.md lacks the line of plugin --help")
        mk=$(cd "$root" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n -B build/examples/libkb_layernorm_plain.so 2>&1 |
            grep -E 'nvcc ' | sed 's/^[^ ]*nvcc /nvcc /; s/ *$//')
        line=${line/mine.cu -o libmine.so/examples/plugins/layernorm_plain.cu -o build/examples/libkb_layernorm_plain.so}
        [ "$mk" = "$line" ] || problems+=("make examples builds with '$mk', the docs say '$line'")
    fi
    if [ ${#problems[@]} -eq 0 ]; then
        t_pass "docs: one plugin build line in plugin --help, README.md, docs/plugins.md and the Makefile"
    else
        t_fail "docs: one plugin build line in plugin --help, README.md, docs/plugins.md and the Makefile"
        for line in "${problems[@]}"; do echo "      $line"; done
    fi
}

docs_tests() {
    local f n
    case $KBENCH in /*) docs_kb=$KBENCH ;; *) docs_kb=$root/${KBENCH#./} ;; esac
    docs_examples=${KB_EXAMPLES:-build/examples}
    case $docs_examples in /*) ;; *) docs_examples=$root/$docs_examples ;; esac
    if [ ! -x "$KBENCH" ]; then
        t_fail "docs: $KBENCH is not built (make kbench)"
        return
    fi
    docs_files=$(cd "$root" && echo README.md docs/*.md examples/plugins/README.md examples/python/README.md)
    for f in $docs_files; do
        docs_file "$f"
    done
    n=$(grep -c '' "$root/README.md")
    if [ "$n" -le 300 ]; then
        t_pass "docs: README.md is a guide of at most 300 lines ($n)"
    else
        t_fail "docs: README.md is a guide of at most 300 lines ($n): the reference goes to docs/"
    fi
    docs_links
    docs_plugin_line
}

# run alone: tests/docs.sh (KBENCH, KB_EXAMPLES as for tests/run.sh)
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -u
    root=$(cd "$(dirname "$0")/.." && pwd)
    cd "$root" || exit 2
    KBENCH=${KBENCH:-./kbench}
    T=$(mktemp -d "${TMPDIR:-/tmp}/kbench-docs.XXXXXX") || exit 2
    trap 'rm -rf "$T"' EXIT
    npass=0 nfail=0 nskip=0
    t_pass() { npass=$((npass + 1)); echo "PASS $1"; }
    t_fail() { nfail=$((nfail + 1)); echo "FAIL $1"; }
    t_skip() { nskip=$((nskip + 1)); echo "SKIP $1"; }
    docs_tests
    echo "docs: $npass passed, $nfail failed, $nskip skipped"
    [ "$nfail" -eq 0 ]
fi
