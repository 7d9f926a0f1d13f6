#!/bin/sh
# PNG plots from a kbench CSV: one per (op, pass), and a roofline:
#
#   scripts/plot.sh results/X.csv [OUTDIR]
#
# writes OUTDIR/X-<op>-<pass>.png and OUTDIR/X-roofline.png (OUTDIR: the
# CSV's directory by default) and prints each path. A group whose rows carry
# gemm_tflops (an op with a GEMM ceiling: the MLP) is drawn in TFLOP/s with
# its GEMM ceilings (flat) and cuBLAS on its shapes (cublas_shape_tflops) as
# the size-matched line; the others in GB/s with the copy ceiling. A group of
# more than 8 series is split by dtype, then by the other varying parameters
# (X-<op>-<pass>-<dtype>[-<param><value>].png). In each (op, pass) group the x axis is the numeric
# parameter with the most distinct values (the first such column on a tie);
# one line per impl x dtype x any other parameter that varies; the dashed
# lines are the size-matched copy bandwidth (copy_gbps) of the cases: one per
# dtype x other varying parameter (the impls of a case share it; cases of
# different byte counts are never averaged together).
# A group where every parameter has a single value gets one bar per series.
# Rows without GB/s (failed or untimed) are left out.
#
# Needs only a POSIX shell, awk and gnuplot (scripts/plot.gp beside this).
# Exit: 0 ok (or nothing to plot), 1 gnuplot missing or failed,
#       2 usage, missing file or not a kbench CSV.
set -u

prog=plot.sh
# the awk functions every part uses: a CSV line split (quoted fields too), a
# number test, a string as a single-quoted gnuplot literal
lib='
function csvsplit(s, a,    n, i, c, f, q, len) {
    if (index(s, "\"") == 0) return split(s, a, ",")
    n = 0; f = ""; q = 0; len = length(s)
    for (i = 1; i <= len; i++) {
        c = substr(s, i, 1)
        if (q) {
            if (c == "\"") {
                if (substr(s, i + 1, 1) == "\"") { f = f "\""; i++ }
                else q = 0
            } else f = f c
        } else if (c == "\"") q = 1
        else if (c == ",") { a[++n] = f; f = "" }
        else f = f c
    }
    a[++n] = f
    return n
}
function header(    i) { sub(/\r$/, ""); nh = csvsplit($0, hdr); for (i = 1; i <= nh; i++) col[hdr[i]] = i }
function isnum(s) { return s ~ /^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$/ }
function q(s) { gsub(/\047/, "\047\047", s); return "\047" s "\047" }
'
die2() { echo "$prog: $*" >&2; exit 2; }

[ $# -ge 1 ] && [ $# -le 2 ] || die2 "usage: scripts/plot.sh RESULTS.csv [OUTDIR]"
csv=$1
[ -e "$csv" ] || die2 "$csv: no such file"
[ -f "$csv" ] && [ -r "$csv" ] || die2 "$csv: not a readable file"

header=$(head -n 1 "$csv" | tr -d '\r')
here=$(cd "$(dirname "$0")" && pwd)

need_gnuplot() {
    command -v gnuplot >/dev/null 2>&1 && return 0
    echo "$prog: gnuplot not found; install it (Debian: apt-get install gnuplot-nox, or run scripts/deps.sh)" >&2
    exit 1
}
# $tmp: the data files. KBENCH_PLOT_DATA=DIR keeps them there (for tests
# and for plotting them some other way); otherwise they go with the script,
# a signal included.
make_tmp() {
    if [ -n "${KBENCH_PLOT_DATA:-}" ]; then
        tmp=$KBENCH_PLOT_DATA
        mkdir -p "$tmp" || exit 1
    else
        tmp=$(mktemp -d "${TMPDIR:-/tmp}/kbench-plot.XXXXXX") || exit 1
        trap 'rm -rf "$tmp"' EXIT
    fi
    trap 'exit 130' INT TERM
}
status=0
# gnuplot's warnings count as failures: a plot that warned is not the one asked for
draw() { # args-file script png
    if gnuplot -e "$(cat "$1")" "$2" 2>"$tmp/err" && [ ! -s "$tmp/err" ]; then
        echo "$3"
    else
        echo "$prog: gnuplot failed for $3:" >&2
        cat "$tmp/err" >&2
        status=1
    fi
}

# kbench compare's CSV (--csv): the speedup chart, OUTDIR/X-speedup.png, or
# the file itself when the second argument ends in .png
case $header in
op,impl,*,speedup,threshold_pct,verdict,*)
    need_gnuplot
    case ${2:-} in
    *.png) png=$2 ;;
    *) d=${2:-$(dirname "$csv")}; b=$(basename "$csv"); png=$d/${b%.csv}-speedup.png ;;
    esac
    mkdir -p "$(dirname "$png")" || exit 1
    make_tmp
    awk -v tmp="$tmp" -v out="$png" "$lib"'
{ sub(/\r$/, "") }
NR == 1 {
    header()
    isp = col["speedup"]; ith = col["threshold_pct"]; ive = col["verdict"]; ibm = col["base_median_ms"]
    ibr = col["base_run"]; inr = col["new_run"]
    next
}
{
    n = csvsplit($0, f)
    if (!isnum(f[isp]) || f[isp] <= 0) next   # only in one file, or n/a
    nr++
    sp[nr] = f[isp] + 0; th[nr] = isnum(f[ith]) ? f[ith] / 100 : 0; ve[nr] = f[ive]
    bm[nr] = isnum(f[ibm]) ? f[ibm] + 0 : 0
    for (c = 1; c < ibm; c++) { v[nr, c] = f[c]; if (!((c, f[c]) in seen)) { seen[c, f[c]] = 1; nd[c]++ } }
    if (ibr) brun = f[ibr]; if (inr) nrun = f[inr]
    cnt[ve[nr]]++
}
END {
    if (!nr) { print "none" > (tmp "/speedup.args"); exit }
    # many cases: those the rules called, and say so
    keep = nr > 200
    for (r = 1; r <= nr; r++) ord[r] = r
    for (i = 2; i <= nr; i++) {          # by speedup, slowest first
        t = ord[i]
        for (j = i - 1; j >= 1 && sp[ord[j]] > sp[t]; j--) ord[j + 1] = ord[j]
        ord[j + 1] = t
    }
    m = 0; xlo = 1; xhi = 1
    for (i = 1; i <= nr; i++) {
        r = ord[i]
        if (keep && ve[r] == "same") continue
        # the label: what differs between cases (op and impl where they vary); a
        # word alone where it names itself (fwd, bf16, thd, neox), else name=value
        lab = ""
        for (c = 1; c < ibm; c++) {
            if (v[r, c] == "" || nd[c] < 2) continue
            lab = lab (lab == "" ? "" : " ") (isnum(v[r, c]) ? hdr[c] "=" v[r, c] : v[r, c])
        }
        if (lab == "") lab = v[r, 1] " " v[r, 2]
        gsub(/"/, "\047", lab)
        # the band the rules call same: the threshold (or minimum effect), and
        # never less than the 0.5 us floor of compare (the resolution of the event timer)
        b = th[r]; if (bm[r] > 0 && 0.0005 / bm[r] > b) b = 0.0005 / bm[r]
        lo = 1 / (1 + b); hi = 1 + b
        colr = ve[r] == "faster" ? 2924588 : ve[r] == "slower" ? 14034728 : ve[r] == "FAILED" ? 6950317 : 8355711
        printf "%d %.6g %.6g %.6g %d \"%s\"\n", ++m, sp[r], lo, hi, colr, lab > (tmp "/speedup.dat")
        if (sp[r] < xlo) xlo = sp[r]; if (lo < xlo) xlo = lo
        if (sp[r] > xhi) xhi = sp[r]; if (hi > xhi) xhi = hi
    }
    if (!m) print "0 1 1 1 8355711 \"\"" > (tmp "/speedup.dat")
    close(tmp "/speedup.dat")
    fixed = ""
    for (c = 1; c < ibm; c++) if (nd[c] == 1 && v[1, c] != "") fixed = fixed (fixed == "" ? "" : "  ") hdr[c] "=" v[1, c]
    sub_t = sprintf("%d cases: %d faster, %d slower, %d same%s", nr, cnt["faster"], cnt["slower"], cnt["same"], cnt["FAILED"] ? ", " cnt["FAILED"] " FAILED" : "")
    if (fixed != "") sub_t = sub_t "; every case: " fixed
    if (keep) sub_t = sub_t " (the " nr - cnt["same"] " not same drawn)"
    if (brun != "") sub_t = sub_t "\nbase: " brun
    if (nrun != "") sub_t = sub_t "\nnew: " nrun
    pad = (xhi - xlo) * 0.05 + 0.002
    printf "out=%s; ttl=%s; sub=%s; df=%s; n=%d; xlo=%.6g; xhi=%.6g; h=%d", q(out), q("kbench compare: speedup per case"), q(sub_t),
           q(tmp "/speedup.dat"), (m > 0 ? m : 1), xlo - pad, xhi + pad, 160 + 18 * (m > 0 ? m : 1) > (tmp "/speedup.args")
}
' "$csv" || exit 2
    if [ "$(cat "$tmp/speedup.args")" = none ]; then echo "$prog: $csv: nothing to plot (no matched case with a speedup)"; exit 0; fi
    draw "$tmp/speedup.args" "$here/speedup.gp" "$png"
    exit $status
    ;;
esac

case $header in
op,pass,impl,dtype,layout,*) ;;
*) die2 "$csv: not a kbench CSV (the header must start with op,pass,impl,dtype,layout)" ;;
esac
for col in median_ms gbps copy_gbps; do
    case ",$header," in
    *",$col,"*) ;;
    *) die2 "$csv: not a kbench CSV (no $col column in the header)" ;;
    esac
done

gp=$here/plot.gp
[ -f "$gp" ] || { echo "$prog: $gp is missing" >&2; exit 1; }
need_gnuplot

outdir=${2:-$(dirname "$csv")}
mkdir -p "$outdir" || { echo "$prog: cannot create $outdir" >&2; exit 1; }
base=$(basename "$csv")
base=${base%.csv}

make_tmp

# The awk part: parses the CSV (quoted fields included), and for each
# (op, pass) group writes the series' data files ($tmp/gK_sN.dat: x gbps copy),
# the copy ceilings ($tmp/gK_copyC.dat: x copy_gbps, C per dtype x varying
# parameters, the mean over the rows of those cases at x), the gnuplot
# assignments ($tmp/gK.args) and a line "K<TAB>png path" in $tmp/manifest.
awk -v tmp="$tmp" -v outdir="$outdir" -v base="$base" -v prog="$prog" "$lib"'
function fname(s) { gsub(/[^A-Za-z0-9_.+-]/, "_", s); return s }
function ispow2(x) {
    if (x < 1 || x != int(x)) return 0
    while (x > 1 && x % 2 == 0) x /= 2
    return x == 1
}
function fmt(x) { return (x == int(x) && x < 1e15 && x > -1e15) ? sprintf("%d", x) : sprintf("%.6g", x) }
# the x axis of group g: the numeric parameter with the most distinct values
# (0: none has two); dall_[c]: distinct values of column c (4: the dtype)
function axis_of(g, dall_,    seen, dnon, nonnum, r, c, v, best, axis) {
    split("", dall_)
    for (r = 1; r <= nr; r++) {
        if (rg[r] != g) continue
        for (c = 4; c <= p1; c++) {
            v = rv[r, c]
            if (!((c, v) in seen)) { seen[c, v] = 1; dall_[c]++; if (v != "" && c >= p0) dnon[c]++ }
            if (v != "" && !isnum(v)) nonnum[c] = 1
        }
    }
    axis = 0; best = 0
    for (c = p0; c <= p1; c++)
        if (dnon[c] > best && !(c in nonnum)) { best = dnon[c]; axis = c }
    return best >= 2 ? axis : 0
}
# the most series (impl x the varying columns not faceted) in one facet of g
# when the columns fc[1..k] are faceted (nv varying columns in vc)
function series_max(g, fc, k, vc, nv,    r, j, fk, sk, cnt, seen, m) {
    m = 0
    for (r = 1; r <= nr; r++) {
        if (rg[r] != g) continue
        fk = ""
        for (j = 1; j <= k; j++) fk = fk SUBSEP rv[r, fc[j]]
        sk = rimpl[r]
        for (j = k + 1; j <= nv; j++) sk = sk SUBSEP rv[r, vc[j]]
        if (!((fk, sk) in seen)) { seen[fk, sk] = 1; if (++cnt[fk] > m) m = cnt[fk] }
    }
    return m
}

{ sub(/\r$/, "") }
NR == 1 {
    nh = csvsplit($0, hdr)
    for (i = 1; i <= nh; i++) col[hdr[i]] = i
    imed = col["median_ms"]; igb = col["gbps"]; icp = col["copy_gbps"]
    itf = col["tflops"]; igm = col["gemm_tflops"]; ics = col["cublas_shape_tflops"]
    if (!imed || !igb || !icp || imed < 6) {
        print prog ": not a kbench CSV (header columns)" > "/dev/stderr"; bad = 1; exit 2
    }
    p0 = 5; p1 = imed - 1      # layout and the parameter columns
    next
}
/^[ \t]*$/ { next }
{
    n = csvsplit($0, f)
    if (f[1] == "op" && f[2] == "pass") next          # a repeated header
    if (n < igb || f[igb] == "" || !isnum(f[igb])) { nskip++; next }
    k = f[1] SUBSEP f[2]
    if (!(k in gid)) { gid[k] = ++ng; gop[ng] = f[1]; gpass[ng] = f[2] }
    nr++
    rg[nr] = gid[k]; rimpl[nr] = f[3]; rdt[nr] = f[4]
    for (c = p0; c <= p1; c++) rv[nr, c] = f[c]
    rv[nr, 4] = f[4]   # the dtype, a facet like the parameters
    rgb[nr] = f[igb] + 0
    rcp[nr] = (icp <= n && isnum(f[icp])) ? f[icp] + 0 : ""
    # an op whose descriptor names a GEMM ceiling has gemm_tflops: drawn in TFLOP/s
    rgm[nr] = (igm && isnum(f[igm]) && f[igm] > 0) ? f[igm] + 0 : ""
    rtf[nr] = (itf && isnum(f[itf])) ? f[itf] + 0 : ""
    rcs[nr] = (ics && isnum(f[ics]) && f[ics] > 0) ? f[ics] + 0 : ""
}
END {
    if (bad) exit 2
    if (nskip) printf "%s: %s: left out %d row(s) without GB/s (failed or untimed)\n", prog, FILENAME, nskip > "/dev/stderr"
    # Facets: a group of more than MAXS series is split by dtype, then by the
    # other varying parameters in order, until no chart has more than MAXS
    MAXS = 8; ng2 = 0
    for (g = 1; g <= ng; g++) {
        ax = axis_of(g, dall); nvc = 0
        split("", vc)
        for (c = 4; c <= p1; c++) if (c != ax && dall[c] > 1) vc[++nvc] = c
        k = 0
        while (k < nvc && series_max(g, vc, k, vc, nvc) > MAXS) k++
        split("", fid)
        for (r = 1; r <= nr; r++) {
            if (rg[r] != g) continue
            fk = ""; fl = ""; fs = ""
            for (j = 1; j <= k; j++) {
                v = rv[r, vc[j]]
                fk = fk SUBSEP v
                fl = fl (fl == "" ? "" : ", ") (vc[j] == 4 ? v : hdr[vc[j]] "=" v)
                fs = fs "-" (vc[j] == 4 ? v : hdr[vc[j]] v)
            }
            if (!(fk in fid)) { fid[fk] = ++ng2; gop2[ng2] = gop[g]; gpass2[ng2] = gpass[g]; gfl[ng2] = fl; gfs[ng2] = fs }
            rg2[r] = fid[fk]
        }
    }
    for (r = 1; r <= nr; r++) rg[r] = rg2[r]
    for (g = 1; g <= ng2; g++) { gop[g] = gop2[g]; gpass[g] = gpass2[g] }
    ng = ng2
    nplot = 0
    for (g = 1; g <= ng; g++) {
        # the metric: TFLOP/s against the GEMM ceilings where the rows carry one
        tfl = 0
        for (r = 1; r <= nr; r++) if (rg[r] == g && rgm[r] != "" && rtf[r] != "") tfl = 1
        # distinct values per column: dall counts empty as a value, dnon only the non-empty ones
        split("", seen); split("", dall); split("", dnon); split("", nonnum); split("", one)
        for (r = 1; r <= nr; r++) {
            if (rg[r] != g) continue
            for (c = p0; c <= p1; c++) {
                v = rv[r, c]
                if (!((c, v) in seen)) {
                    seen[c, v] = 1; dall[c]++; one[c] = v
                    if (v != "") dnon[c]++
                }
                if (v != "" && !isnum(v)) nonnum[c] = 1
            }
        }
        axis = 0; best = 0
        for (c = p0; c <= p1; c++)
            if (dnon[c] > best && !(c in nonnum)) { best = dnon[c]; axis = c }
        mode = best >= 2 ? "line" : "bar"
        # fixed parameters go to the title, varying ones to the legend
        sub_t = ""; nvar = 0
        for (c = p0; c <= p1; c++) {
            if (mode == "line" && c == axis) continue
            if (dall[c] > 1) var[++nvar] = c
            else if (one[c] != "") sub_t = sub_t (sub_t == "" ? "" : "  ") hdr[c] "=" one[c]
        }
        # series: impl x dtype x the varying parameters
        split("", sid); split("", irank); split("", drank); split("", vrank); split("", cid)
        ns = 0; ni = 0; nd = 0; nv = 0; nleft = 0; ncg = 0
        for (r = 1; r <= nr; r++) {
            if (rg[r] != g) continue
            if (mode == "line" && rv[r, axis] == "") { nleft++; continue }
            vk = ""; vl = ""
            for (j = 1; j <= nvar; j++) {
                c = var[j]; vk = vk SUBSEP rv[r, c]
                if (rv[r, c] != "") vl = vl " " hdr[c] "=" rv[r, c]
            }
            if (!(rimpl[r] in irank)) irank[rimpl[r]] = ++ni
            if (!(rdt[r] in drank)) drank[rdt[r]] = ++nd
            if (!(vk in vrank)) vrank[vk] = ++nv
            sk = rimpl[r] SUBSEP rdt[r] SUBSEP vk
            if (!(sk in sid)) {
                sid[sk] = ++ns; np[ns] = 0
                slab[ns] = rimpl[r] (rdt[r] == "" ? "" : " " rdt[r]) vl
                simpl[ns] = irank[rimpl[r]]; sname[ns] = rimpl[r]
                # lines: grouped by impl; bars: comparable bars side by side
                if (mode == "line") skey[ns] = sprintf("%06d %06d %06d", irank[rimpl[r]], drank[rdt[r]], vrank[vk])
                else skey[ns] = sprintf("%06d %06d %06d", vrank[vk], drank[rdt[r]], irank[rimpl[r]])
            }
            s = sid[sk]; m = ++np[s]
            # the size-matched ceiling (copy; cuBLAS on the shapes of the row) depends on
            # the case, not the impl: one per dtype x varying parameters
            ck = rdt[r] SUBSEP vk
            if (!(ck in cid)) { cid[ck] = ++ncg; clab[ncg] = (tfl ? "cuBLAS on these shapes" : "copy") (rdt[r] == "" ? "" : " " rdt[r]) vl }
            scg[s] = cid[ck]
            px[s, m] = mode == "line" ? rv[r, axis] + 0 : 0
            py[s, m] = tfl ? rtf[r] : rgb[r]; pc[s, m] = tfl ? rcs[r] : rcp[r]
            if (tfl && rgm[r] != "" && !((g, rdt[r]) in gmv)) { gmv[g, rdt[r]] = rgm[r]; gmd[g, ++ngm[g]] = rdt[r] }
        }
        if (nleft) printf "%s: %s %s: left out %d row(s) with no %s\n", prog, gop[g], gpass[g], nleft, hdr[axis] > "/dev/stderr"
        if (ns == 0) continue
        # series order
        for (i = 1; i <= ns; i++) ord[i] = i
        for (i = 2; i <= ns; i++) {
            t = ord[i]
            for (j = i - 1; j >= 1 && skey[ord[j]] > skey[t]; j--) ord[j + 1] = ord[j]
            ord[j + 1] = t
        }
        split("", xs); split("", seenx); split("", csum); split("", ccnt); nx = 0; ymax = 0
        args = ""
        for (i = 1; i <= ns; i++) {
            s = ord[i]
            # points by x
            for (a = 2; a <= np[s]; a++) {
                tx = px[s, a]; ty = py[s, a]; tc = pc[s, a]
                for (b = a - 1; b >= 1 && px[s, b] > tx; b--) { px[s, b + 1] = px[s, b]; py[s, b + 1] = py[s, b]; pc[s, b + 1] = pc[s, b] }
                px[s, b + 1] = tx; py[s, b + 1] = ty; pc[s, b + 1] = tc
            }
            file = tmp "/g" g "_s" i ".dat"
            hc = 0 # the series has a size-matched ceiling (a CSV of an older kbench may lack its column)
            for (a = 1; a <= np[s]; a++) {
                print fmt(px[s, a]), py[s, a], (pc[s, a] == "" ? "?" : pc[s, a]) > file
                x = px[s, a]; cx = scg[s] SUBSEP x
                if (!(x in seenx)) { xs[++nx] = x; seenx[x] = 1 }
                if (pc[s, a] != "") { csum[cx] += pc[s, a]; ccnt[cx]++; hc = 1; if (pc[s, a] > ymax) ymax = pc[s, a] }
                if (py[s, a] > ymax) ymax = py[s, a]
            }
            close(file)
            args = args sprintf("f%d=%s; t%d=%s; c%d=%d; h%d=%d; ", i, q(file), i, q(slab[s]), i, mode == "line" ? i : simpl[s], i, hc)
            # bars are coloured by impl: one legend entry per impl
            if (mode == "bar") {
                if (!((g, simpl[s]) in keyed)) { keyed[g, simpl[s]] = 1; kt = sname[s] } else kt = ""
                args = args sprintf("k%d=%s; ", i, q(kt))
            } else args = args sprintf("k%d=%s; ", i, q(slab[s]))
        }
        # x values: sorted, copy ceiling averaged per x
        for (a = 2; a <= nx; a++) {
            t = xs[a]
            for (b = a - 1; b >= 1 && xs[b] > t; b--) xs[b + 1] = xs[b]
            xs[b + 1] = t
        }
        nc = 0
        if (mode == "line")
            for (k = 1; k <= ncg; k++) {
                file = tmp "/g" g "_copy" k ".dat"; wrote = 0
                for (a = 1; a <= nx; a++) {
                    cx = k SUBSEP xs[a]
                    if (ccnt[cx]) { print fmt(xs[a]), csum[cx] / ccnt[cx] > file; wrote = 1 }
                }
                if (!wrote) continue
                close(file); nc++
                args = args sprintf("cf%d=%s; cl%d=%s; ", nc, q(file), nc, q(ncg == 1 ? (tfl ? "cuBLAS on these shapes" : "copy (size-matched)") : clab[k] (tfl ? "" : " (size-matched)")))
            }
        # the GEMM ceilings, flat: one per dtype
        for (j = 1; j <= ngm[g]; j++) {
            v = gmv[g, gmd[g, j]]
            if (v > ymax) ymax = v
            args = args sprintf("gm%d=%.10g; gl%d=%s; ", j, v, j, q("GEMM ceiling " gmd[g, j] " " sprintf("%.0f", v) " TFLOP/s"))
        }
        args = args sprintf("ngm=%d; ylab=%s; clabel=%s; ", ngm[g] + 0, q(tfl ? "TFLOP/s" : "GB/s"), q(tfl ? "cuBLAS on these shapes" : "copy (size-matched)"))
        logx = 0; xmin = xs[1]; xmax = xs[nx]; xt = ""
        if (mode == "line") {
            p2 = 1
            for (a = 1; a <= nx; a++) if (!ispow2(xs[a])) p2 = 0
            if (xmin > 0 && (p2 || xmax / xmin > 8)) logx = 1
            if (logx) { lo = xmin / 1.25; hi = xmax * 1.25 }
            else { lo = xmin - (xmax - xmin) * 0.05; hi = xmax + (xmax - xmin) * 0.05 }
            if (nx <= 12) for (a = 1; a <= nx; a++) xt = xt (a > 1 ? ", " : "") fmt(xs[a])
            # tic labels closer than their width (about 7 px a character over an
            # axis of about 650 px) are turned upright
            for (a = 2; a <= nx && !xrot; a++) {
                gap = logx ? (log(xs[a]) - log(xs[a - 1])) / (log(hi) - log(lo)) : (xs[a] - xs[a - 1]) / (hi - lo)
                if (gap * 650 < 7 * (length(fmt(xs[a])) + length(fmt(xs[a - 1]))) / 2 + 6) xrot = 1
            }
        } else { lo = 0.4; hi = ns + 0.6 }
        ttl = "kbench " gop[g] (gpass[g] == "" ? "" : " " gpass[g]) (gfl[g] == "" ? "" : " (" gfl[g] ")") ": " (tfl ? "TFLOP/s " : "GB/s ") (mode == "line" ? "vs " hdr[axis] : "per impl")
        out = outdir "/" base "-" fname(gop[g]) (gpass[g] == "" ? "" : "-" fname(gpass[g])) fname(gfs[g]) ".png"
        args = args sprintf("n=%d; mode=%s; out=%s; ttl=%s; sub=%s; xlab=%s; logx=%d; xlo=%.10g; xhi=%.10g; xt=%s; xrot=%d; ymax=%.10g; nc=%d",
                            ns, q(mode), q(out), q(ttl), q(sub_t), q(mode == "line" ? hdr[axis] : ""), logx, lo, hi, q(xt), xrot, ymax, nc)
        xrot = 0
        print args > (tmp "/g" g ".args"); close(tmp "/g" g ".args")
        print g "\t" out > (tmp "/manifest")
        nplot++
    }
    if (nplot) close(tmp "/manifest")
}
' "$csv" || exit 2

# The roofline: every row with flops, bytes and TFLOP/s a point at
# (flops / bytes, tflops); the roofs are the largest copy_gbps of the rows
# (sloped) and each dtype's gemm_tflops (flat). $tmp/roof.args for
# roofline.gp; $tmp/roofs.txt says where the roofs were put (one line each:
# "copy GBPS", "gemm DTYPE TFLOPS").
awk -v tmp="$tmp" -v out="$outdir/$base-roofline.png" -v base="$base" "$lib"'
{ sub(/\r$/, "") }
NR == 1 {
    header()
    ifl = col["flops"]; iby = col["bytes"]; itf = col["tflops"]; icp = col["copy_gbps"]; igm = col["gemm_tflops"]
    if (!ifl || !iby || !itf) exit
    next
}
{
    n = csvsplit($0, f)
    if (f[1] == "op" && f[2] == "pass") next
    if (icp && isnum(f[icp]) && f[icp] + 0 > copy) copy = f[icp] + 0
    if (igm && isnum(f[igm]) && f[igm] + 0 > 0) {
        if (!(f[4] in gemm)) { gd[++ngd] = f[4]; gemm[f[4]] = 0 }
        if (f[igm] + 0 > gemm[f[4]]) gemm[f[4]] = f[igm] + 0
    }
    if (!isnum(f[ifl]) || !isnum(f[iby]) || !isnum(f[itf]) || f[ifl] <= 0 || f[iby] <= 0 || f[itf] <= 0) next
    nr++
    rop[nr] = f[1]; rimpl[nr] = f[3]; rdt[nr] = f[4]; rpass[nr] = f[2]
    rx[nr] = f[ifl] / f[iby]; ry[nr] = f[itf] + 0
}
END {
    if (!nr) exit
    xlo = rx[1]; xhi = rx[1]; ylo = ry[1]; yhi = ry[1]
    # markers by op; by dtype when the file holds one op in several dtypes
    for (r = 1; r <= nr; r++) {
        if (!(rop[r] in oc)) { oc[rop[r]] = ++nop; oname[nop] = rop[r] }
        if (!(rdt[r] in dc)) { dc[rdt[r]] = ++ndt; dname[ndt] = rdt[r] }
    }
    bydt = nop == 1 && ndt > 1
    for (r = 1; r <= nr; r++) {
        if (!(rimpl[r] in ic)) { ic[rimpl[r]] = ++ni; iname[ni] = rimpl[r] }
        mk = bydt ? rdt[r] : rop[r]
        k = mk SUBSEP rimpl[r]
        if (!(k in sid)) { sid[k] = ++ns; sc[ns] = ic[rimpl[r]]; sp[ns] = bydt ? dc[rdt[r]] : oc[rop[r]] }
        print rx[r], ry[r] > (tmp "/roof_s" sid[k] ".dat")
        if (rx[r] < xlo) xlo = rx[r]; if (rx[r] > xhi) xhi = rx[r]
        if (ry[r] < ylo) ylo = ry[r]; if (ry[r] > yhi) yhi = ry[r]
        # the share of the roof above the point: the lower of the two
        att = copy > 0 ? rx[r] * copy / 1000 : 0
        kind = "copy"
        if ((rdt[r] in gemm) && (att == 0 || gemm[rdt[r]] < att)) { att = gemm[rdt[r]]; kind = rdt[r] " GEMM" }
        if (att > 0 && (!(rop[r] in bestf) || ry[r] / att > bestf[rop[r]])) {
            bestf[rop[r]] = ry[r] / att; bestr[rop[r]] = r; bestk[rop[r]] = kind
        }
    }
    for (s = 1; s <= ns; s++) close(tmp "/roof_s" s ".dat")
    print "copy", copy > (tmp "/roofs.txt")
    for (i = 1; i <= ngd; i++) {
        print "gemm", gd[i], gemm[gd[i]] > (tmp "/roofs.txt")
        if (gemm[gd[i]] > yhi) yhi = gemm[gd[i]]
        if (copy > 0 && gemm[gd[i]] * 1000 / copy > xhi) xhi = gemm[gd[i]] * 1000 / copy
    }
    close(tmp "/roofs.txt")
    if (!ngd && copy > 0 && xhi * copy / 1000 > yhi) yhi = xhi * copy / 1000
    # the best row of each op: its share next to the point, what it is in the key
    nl = 0
    for (o = 1; o <= nop; o++) {
        if (!(oname[o] in bestr)) continue
        r = bestr[oname[o]]
        printf "%.10g %.10g \"%.0f%%\"\n", rx[r], ry[r], 100 * bestf[oname[o]] > (tmp "/roof_labels.dat")
        bl[++nl] = sprintf("%s: %s %s%s, %.0f%% of the %s roof", oname[o], rimpl[r], rdt[r], rpass[r] == "" ? "" : " " rpass[r], 100 * bestf[oname[o]], bestk[oname[o]])
    }
    if (nl) close(tmp "/roof_labels.dat")
    else print "1e-300 1e-300 \"\"" > (tmp "/roof_labels.dat")
    args = sprintf("out=%s; ttl=%s; sub=%s; xlo=%.6g; xhi=%.6g; ylo=%.6g; yhi=%.6g; copy=%.10g; lf=%s; n=%d; ng=%d; ni=%d; nop=%d; nb=%d; ",
                   q(out), q("kbench " base ": roofline"), q(copy > 0 ? "" : "no copy ceiling in this file"),
                   xlo / 2, xhi * 2, ylo / 2, yhi * 3, copy, q(tmp "/roof_labels.dat"), ns, ngd, ni, bydt ? ndt : nop, nl)
    for (i = 1; i <= nl; i++) args = args sprintf("bl%d=%s; ", i, q(bl[i]))
    for (s = 1; s <= ns; s++) args = args sprintf("f%d=%s; c%d=%d; p%d=%d; ", s, q(tmp "/roof_s" s ".dat"), s, sc[s], s, sp[s])
    for (i = 1; i <= ngd; i++) args = args sprintf("gv%d=%.10g; gl%d=%s; ", i, gemm[gd[i]], i, q(gd[i] " GEMM " sprintf("%.0f", gemm[gd[i]]) " TFLOP/s"))
    for (i = 1; i <= ni; i++) args = args sprintf("in%d=%s; ic%d=%d; ", i, q(iname[i]), i, i)
    if (bydt) for (i = 1; i <= ndt; i++) args = args sprintf("on%d=%s; op%d=%d; ", i, q(dname[i]), i, i)
    else for (i = 1; i <= nop; i++) args = args sprintf("on%d=%s; op%d=%d; ", i, q(oname[i]), i, i)
    print args > (tmp "/roof.args")
}
' "$csv"

# The fused MLP against the better of its two cuBLAS paths: for each MLP case
# with fused and cublas or cublas_cat timed, min(cublas, cublas_cat) / fused
# (above 1: fused is faster) against tokens, a line per (hidden, inter, dtype),
# with parity and issue 22's 1.15 target drawn flat: $tmp/mlpr.args for
# plot.gp, $tmp/mlpr_s*.dat the lines (tokens ratio).
awk -v tmp="$tmp" -v out="$outdir/$base-mlp-fused-vs-cublas.png" "$lib"'
{ sub(/\r$/, "") }
NR == 1 {
    header()
    it = col["tokens"]; ih = col["hidden"]; ii = col["inter"]; im = col["median_ms"]
    if (!it || !ih || !ii || !im) exit
    next
}
{
    n = csvsplit($0, f)
    if (f[1] != "mlp" || !isnum(f[im]) || f[im] <= 0) next
    k = f[4] SUBSEP f[ih] SUBSEP f[ii] SUBSEP f[it]
    if (f[3] == "fused") fz[k] = f[im]
    else if (f[3] == "cublas" || f[3] == "cublas_cat") { if (!(k in cb) || f[im] < cb[k]) cb[k] = f[im] }
    else next
    if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
}
END {
    for (j = 1; j <= nk; j++) {
        k = keys[j]
        if (!(k in fz) || !(k in cb)) continue
        split(k, p, SUBSEP)
        sk = p[2] SUBSEP p[3] SUBSEP p[1]
        if (!(sk in sid)) { sid[sk] = ++ns; lab[ns] = "hidden " p[2] ", inter " p[3] ", " p[1]; np[ns] = 0 }
        s = sid[sk]
        x[s, ++np[s]] = p[4] + 0; y[s, np[s]] = cb[k] / fz[k]
        if (p[4] + 0 > 0 && (!xmin || p[4] + 0 < xmin)) xmin = p[4] + 0
        if (p[4] + 0 > xmax) xmax = p[4] + 0
        if (cb[k] / fz[k] > ymax) ymax = cb[k] / fz[k]
    }
    if (!ns) exit
    args = ""
    for (s = 1; s <= ns; s++) {
        for (a = 2; a <= np[s]; a++) { # by tokens
            tx = x[s, a]; ty = y[s, a]
            for (b = a - 1; b >= 1 && x[s, b] > tx; b--) { x[s, b + 1] = x[s, b]; y[s, b + 1] = y[s, b] }
            x[s, b + 1] = tx; y[s, b + 1] = ty
        }
        file = tmp "/mlpr_s" s ".dat"
        for (a = 1; a <= np[s]; a++) printf "%d %.6g ?\n", x[s, a], y[s, a] > file
        close(file)
        args = args sprintf("f%d=%s; t%d=%s; k%d=%s; c%d=%d; ", s, q(file), s, q(lab[s]), s, q(lab[s]), s, s)
    }
    if (ymax < 1.15) ymax = 1.15
    logx = xmin > 0 && xmax / xmin > 8
    args = args sprintf("n=%d; mode=%s; out=%s; ttl=%s; sub=%s; xlab=%s; logx=%d; xlo=%.6g; xhi=%.6g; xt=%s; xrot=0; ymax=%.6g; nc=0; ",
                        ns, q("line"), q(out), q("kbench mlp: fused against the better cuBLAS path (min(cublas, cublas_cat) / fused)"),
                        q("above 1: fused is faster; issue 22 asks for 1.15 from 2048 tokens on"), q("tokens"), logx,
                        logx ? xmin / 1.25 : xmin - 1, logx ? xmax * 1.25 : xmax + 1, q(""), ymax)
    args = args sprintf("ngm=2; gm1=1; gl1=%s; gm2=1.15; gl2=%s; ylab=%s; clabel=%s", q("parity"), q("1.15 (the target at 2048 tokens and more)"),
                        q("speedup of fused"), q(""))
    print args > (tmp "/mlpr.args")
}
' "$csv"

if [ ! -s "$tmp/manifest" ] && [ ! -s "$tmp/roof.args" ]; then
    echo "$prog: $csv: nothing to plot (no rows with GB/s)"
    exit 0
fi

tab=$(printf '\t')
if [ -s "$tmp/manifest" ]; then
    while IFS=$tab read -r g png; do draw "$tmp/g$g.args" "$gp" "$png"; done <"$tmp/manifest"
fi
if [ -s "$tmp/roof.args" ]; then
    [ -f "$here/roofline.gp" ] || { echo "$prog: $here/roofline.gp is missing" >&2; exit 1; }
    draw "$tmp/roof.args" "$here/roofline.gp" "$outdir/$base-roofline.png"
fi
[ -s "$tmp/mlpr.args" ] && draw "$tmp/mlpr.args" "$gp" "$outdir/$base-mlp-fused-vs-cublas.png"
exit $status
