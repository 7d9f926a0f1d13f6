#!/usr/bin/env bash
# Checks that what kbench needs to build and test is installed:
#   cJSON headers  /usr/include/cjson/cJSON.h   (Debian: libcjson-dev)
#   cmocka         /usr/include/cmocka.h        (Debian: libcmocka-dev)
#   python3        tests/layers.py, the house's rules (Debian: python3)
#   gnuplot        the `gnuplot` command        (Debian: gnuplot-nox)
#   Slurm, munge   slurmctld, slurmd, munged     (Debian: slurm-wlm, munge; only
#                  for `make test-slurm`)
#   nvcc           the CUDA toolkit's compiler  (on PATH, $NVCC, or $CUDA/bin/nvcc;
#                  CUDA defaults to /usr/local/cuda as in the Makefile)
# Missing Debian packages are installed when running as root with apt-get;
# otherwise the command to run is printed. The CUDA toolkit is never
# installed here. Silent when everything is present; exits 1 when something
# is still missing afterwards, except what only some tests need:
#
#   scripts/deps.sh [WHAT...] [--optional WHAT...]
#       WHAT: build (cJSON, nvcc), test (cmocka; python3 optional), plot
#       (gnuplot), slurm (slurm-wlm, munge); default: build, test and plot.
#       Parts after --optional, and python3 (only tests/layers.py and a few
#       JSON checks of tests/cli.sh use it), may stay missing where they cannot
#       be installed (an offline node, no root): one line says what is skipped
#       and it exits 0; the tests that need them count as SKIP. Under CI=true
#       every part is required.
#   `make test` asks for build and test, plot optional; `make run` for build
#   and plot.
set -u

want_build=0 want_test=0 want_plot=0 want_slurm=0
opt_plot=0 # 1: plot may stay missing (make test: only the plot tests need it)
ci=0
[ "${CI:-}" = true ] || [ "${CI:-}" = 1 ] && ci=1
[ $# -eq 0 ] && set -- build test plot
optional=0
for w in "$@"; do
    case $w in
    --optional) optional=1 ;;
    build) want_build=1 ;;
    test) want_test=1 ;;
    plot) want_plot=1 opt_plot=$optional ;;
    slurm) want_slurm=1 ;;
    *) echo "deps: unknown part '$w' (build, test, plot, slurm; --optional before optional ones)" >&2; exit 2 ;;
    esac
done
[ $ci = 1 ] && opt_plot=0

CUDA=${CUDA:-/usr/local/cuda}

# The Debian packages missing, as one list: required (the build, or a part
# asked for without --optional), optional (may stay missing), or all.
missing_pkgs() {
    local req=() opt=()
    [ $want_build = 0 ] || [ -f /usr/include/cjson/cJSON.h ] || req+=(libcjson-dev)
    [ $want_test = 0 ] || [ -f /usr/include/cmocka.h ] || req+=(libcmocka-dev)
    [ $want_slurm = 0 ] || command -v slurmctld >/dev/null 2>&1 || req+=(slurm-wlm)
    [ $want_slurm = 0 ] || command -v munged >/dev/null 2>&1 || req+=(munge)
    if [ $want_test = 1 ] && ! command -v python3 >/dev/null 2>&1; then
        if [ $ci = 1 ]; then req+=(python3); else opt+=(python3); fi
    fi
    if [ $want_plot = 1 ] && ! gnuplot --version >/dev/null 2>&1; then
        if [ $opt_plot = 1 ]; then opt+=(gnuplot-nox); else req+=(gnuplot-nox); fi
    fi
    case $1 in
    required) echo "${req[*]:-}" ;;
    optional) echo "${opt[*]:-}" ;;
    all) echo "${req[*]:-}${req[*]:+${opt[*]:+ }}${opt[*]:-}" ;;
    esac
}

# what the optional packages are for: the tests that are skipped without them
skipped_tests() {
    local p w out=""
    for p in $1; do
        case $p in
        python3) w="python3 (tests/layers.py and the JSON checks of tests/cli.sh)" ;;
        gnuplot-nox) w="gnuplot (the plot tests, and compare --plot's)" ;;
        *) w=$p ;;
        esac
        out="${out:+$out; }$w"
    done
    echo "$out"
}

have_nvcc() {
    if [ -n "${NVCC:-}" ] && command -v "$NVCC" >/dev/null 2>&1; then return 0; fi
    command -v nvcc >/dev/null 2>&1 && return 0
    [ -x "$CUDA/bin/nvcc" ]
}

status=0
pkgs=$(missing_pkgs all)

if [ -n "$pkgs" ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "deps: installing $pkgs" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq || echo "deps: apt-get update failed (no package registry reachable?)" >&2
        req=$(missing_pkgs required)
        # shellcheck disable=SC2086  # word splitting of the package list is intended
        if [ -n "$req" ] && ! apt-get install -y -qq $req; then
            echo "deps: apt-get failed to install: $req" >&2
        fi
        for p in $(missing_pkgs optional); do # one at a time: one that cannot be had keeps no other out
            apt-get install -y -qq "$p" || echo "deps: apt-get failed to install: $p" >&2
        done
        req=$(missing_pkgs required)
        if [ -n "$req" ]; then
            echo "deps: still missing after apt-get: $req" >&2
            status=1
        fi
        why="apt-get could not install it"
    else
        req=$(missing_pkgs required)
        if [ -n "$req" ]; then
            echo "deps: missing packages: $req" >&2
            if command -v apt-get >/dev/null 2>&1; then
                echo "deps: install them with:" >&2
                echo "  sudo apt-get install -y $pkgs" >&2
            else
                echo "deps: (Debian/Ubuntu package names; no apt-get here: install the equivalents" >&2
                echo "      of cJSON headers, cmocka and gnuplot with your system's package manager)" >&2
            fi
            status=1
        fi
        why="not root, or no apt-get: sudo apt-get install -y $(missing_pkgs optional)"
    fi
    opt=$(missing_pkgs optional)
    if [ -n "$opt" ]; then
        echo "deps: skipped: $(skipped_tests "$opt"): not installed ($why); the other tests run, those count as SKIP (CI=true requires them)" >&2
    fi
fi

if [ $want_build = 1 ] && ! have_nvcc; then
    cat >&2 <<EOF
deps: nvcc (the CUDA toolkit) not found: not on PATH and not at $CUDA/bin/nvcc.
      This script cannot install it. Install the CUDA Toolkit from NVIDIA:
        https://developer.nvidia.com/cuda-downloads
        (guide: https://docs.nvidia.com/cuda/cuda-installation-guide-linux/)
      then add its bin directory to PATH (export PATH=/usr/local/cuda/bin:\$PATH)
      or point the Makefile at it: make CUDA=/path/to/cuda ...
EOF
    status=1
fi

exit $status
