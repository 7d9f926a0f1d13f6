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
# is still missing afterwards.
#
#   scripts/deps.sh [WHAT...]   WHAT: build (cJSON, nvcc), test (cmocka),
#                               plot (gnuplot), slurm (slurm-wlm, munge);
#                               default: build, test and plot.
#   `make test` asks for build, test and plot, `make run` for build and plot.
set -u

want_build=0 want_test=0 want_plot=0 want_slurm=0
[ $# -eq 0 ] && set -- build test plot
for w in "$@"; do
    case $w in
    build) want_build=1 ;;
    test) want_test=1 ;;
    plot) want_plot=1 ;;
    slurm) want_slurm=1 ;;
    *) echo "deps: unknown part '$w' (build, test, plot, slurm)" >&2; exit 2 ;;
    esac
done

CUDA=${CUDA:-/usr/local/cuda}

missing_pkgs() {
    local m=()
    [ $want_build = 0 ] || [ -f /usr/include/cjson/cJSON.h ] || m+=(libcjson-dev)
    [ $want_test = 0 ] || [ -f /usr/include/cmocka.h ] || m+=(libcmocka-dev)
    [ $want_test = 0 ] || command -v python3 >/dev/null 2>&1 || m+=(python3)
    [ $want_plot = 0 ] || gnuplot --version >/dev/null 2>&1 || m+=(gnuplot-nox)
    [ $want_slurm = 0 ] || command -v slurmctld >/dev/null 2>&1 || m+=(slurm-wlm)
    [ $want_slurm = 0 ] || command -v munged >/dev/null 2>&1 || m+=(munge)
    echo "${m[*]:-}"
}

have_nvcc() {
    if [ -n "${NVCC:-}" ] && command -v "$NVCC" >/dev/null 2>&1; then return 0; fi
    command -v nvcc >/dev/null 2>&1 && return 0
    [ -x "$CUDA/bin/nvcc" ]
}

status=0
pkgs=$(missing_pkgs)

if [ -n "$pkgs" ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "deps: installing $pkgs" >&2
        export DEBIAN_FRONTEND=noninteractive
        # shellcheck disable=SC2086  # word splitting of the package list is intended
        if ! apt-get update -qq || ! apt-get install -y -qq $pkgs; then
            echo "deps: apt-get failed to install: $pkgs" >&2
        fi
        pkgs=$(missing_pkgs)
        if [ -n "$pkgs" ]; then
            echo "deps: still missing after apt-get: $pkgs" >&2
            status=1
        fi
    else
        echo "deps: missing packages: $pkgs" >&2
        if command -v apt-get >/dev/null 2>&1; then
            echo "deps: install them with:" >&2
            echo "  sudo apt-get install -y $pkgs" >&2
        else
            echo "deps: (Debian/Ubuntu package names; no apt-get here: install the equivalents" >&2
            echo "      of cJSON headers, cmocka and gnuplot with your system's package manager)" >&2
        fi
        status=1
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
