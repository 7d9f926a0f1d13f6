#!/usr/bin/env bash
# Run the unit-test binaries given as arguments (cmocka), then the CLI tests
# of tests/cli.sh against ./kbench (or $KBENCH), tests/layers.py (over the
# objects in $KB_BUILD, default build/), then tests/plot.sh, then
# tests/docs.sh (the commands shown in README.md and docs/*.md).
#
#   tests/run.sh build/tests/test_dtype build/tests/test_refs ...
#
# Counts every cmocka test and every CLI, plot and docs test; ends with
#   tests: N passed, M failed, K skipped
# and exits 1 if anything failed.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
bins=()
for b in "$@"; do
    case $b in /*) bins+=("$b") ;; *) bins+=("$PWD/$b") ;; esac
done
cd "$root" || exit 2
KBENCH=${KBENCH:-./kbench}

T=$(mktemp -d "${TMPDIR:-/tmp}/kbench-tests.XXXXXX") || exit 2
trap 'rm -rf "$T"' EXIT

npass=0
nfail=0
nskip=0
failures=()
t_pass() { npass=$((npass + 1)); echo "PASS $1"; }
t_fail() { nfail=$((nfail + 1)); failures+=("$1"); echo "FAIL $1"; }
t_skip() { nskip=$((nskip + 1)); echo "SKIP $1"; }

# the number N in the first line of $2 that reads "[ $1 ] N test(s)"
cmocka_count() {
    grep -oE "\[ +$1 +\] [0-9]+ test\(s\)" "$2" | head -n 1 | grep -oE '[0-9]+' | head -n 1
}

unbuf=()
command -v stdbuf >/dev/null 2>&1 && unbuf=(stdbuf -oL -eL) # keep cmocka's stdout and stderr in order

# ---- unit tests ----------------------------------------------------------
for b in "${bins[@]}"; do
    name=$(basename "$b")
    echo
    echo "=== $name"
    if [ ! -x "$b" ]; then
        t_fail "$name: not built"
        continue
    fi
    log="$T/$name.log"
    (cd "$root" && timeout 120 "${unbuf[@]}" "$b") 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    p=$(cmocka_count PASSED "$log")
    f=$(cmocka_count FAILED "$log")
    s=$(cmocka_count SKIPPED "$log")
    p=${p:-0} f=${f:-0} s=${s:-0}
    npass=$((npass + p))
    nskip=$((nskip + s))
    if [ "$f" -gt 0 ]; then
        nfail=$((nfail + f))
        while read -r t; do failures+=("$name: $t"); done < <(grep -oE '^\[  FAILED  \] [A-Za-z_][A-Za-z0-9_]*$' "$log" | awk '{print $NF}' | sort -u)
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        # crashed, timed out, or failed in a way cmocka did not count
        t_fail "$name: exit status $rc without a failure count"
    elif [ "$rc" -eq 0 ] && [ "$f" -gt 0 ]; then
        t_fail "$name: exit status 0 despite $f failed test(s)"
    elif [ -z "$(cmocka_count PASSED "$log")" ] && [ "$rc" -eq 0 ]; then
        t_pass "$name (no cmocka summary; counted by exit status)"
    fi
done

# ---- CLI tests -----------------------------------------------------------
echo
echo "=== cli ($KBENCH)"
if [ ! -x "$KBENCH" ]; then
    t_fail "cli: $KBENCH is not built (make kbench)"
else
    # shellcheck source=tests/cli.sh
    . "$root/tests/cli.sh"
    cli_run_all
fi
echo
echo "=== layers (tests/layers.py: the rooms, their order, no loop, small pieces)"
if command -v python3 >/dev/null 2>&1; then
    while IFS= read -r line; do
        echo "$line"
        case $line in
        "PASS "*) npass=$((npass + 1)) ;;
        "FAIL "*) nfail=$((nfail + 1)); failures+=("${line#FAIL }") ;;
        "SKIP "*) nskip=$((nskip + 1)) ;;
        esac
    done < <(python3 "$root/tests/layers.py" "${KB_BUILD:-build}" 2>&1)
elif [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
    t_fail "layers: python3 is not installed (scripts/deps.sh test installs it; CI=true requires it)"
else
    t_skip "layers: python3 is not installed (scripts/deps.sh test installs it)"
fi
echo
echo "=== plot (scripts/plot.sh)"
# shellcheck source=tests/plot.sh
. "$root/tests/plot.sh"
plot_tests
echo
echo "=== docs (the commands of README.md and docs/*.md)"
# shellcheck source=tests/docs.sh
. "$root/tests/docs.sh"
docs_tests

echo
if [ ${#failures[@]} -gt 0 ]; then
    echo "failed:"
    for f in "${failures[@]}"; do echo "  $f"; done
fi
echo "tests: $npass passed, $nfail failed, $nskip skipped"
[ "$nfail" -eq 0 ]
