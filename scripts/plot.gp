# One kbench plot: GB/s (or TFLOP/s, for an op with a GEMM ceiling) per series
# against the swept parameter (mode 'line') or one bar per series (mode 'bar',
# when nothing is swept).
# scripts/plot.sh sets, through gnuplot -e:
#   out          the PNG to write
#   ttl, sub     the title and its second line (the fixed parameters)
#   mode         'line' or 'bar'
#   xlab         the x axis label (the swept parameter)
#   logx         1 for a log2 x axis
#   xlo, xhi     the x range
#   xt           comma-separated x tics ('' for automatic); xrot 1: upright
#   ylab         the y axis: 'GB/s' or 'TFLOP/s'
#   ymax         the largest value or ceiling plotted
#   clabel       the size-matched ceiling's name (copy, or cuBLAS on the shapes)
#   ngm          flat GEMM ceilings, then gm<i> (TFLOP/s) and gl<i> (legend)
#   n            the number of series, then for each series i = 1..n
#                (variables f1, t1, k1, c1, f2, ...; read via value()):
#   f<i>         its data file: x value ceiling ('?' when missing)
#   t<i>         its name; k<i> its legend entry ('' for none)
#   c<i>         its colour (1-based index into colors below)
#   h<i>         1 if its file has a ceiling (mode 'bar': its dashed mark;
#                0 where the CSV lacks the column, an older kbench's); absent: 1
#   nc           the number of size-matched ceiling lines (mode 'line'), then
#   cf<i>, cl<i> its data file (x ceiling) and legend entry

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 1000,600 font 'sans,10'
} else {
    set terminal png size 1000,600
}
set termoption noenhanced
set output out
set datafile missing '?'

colors = '#1f77b4 #d62728 #2ca02c #ff7f0e #9467bd #8c564b #e377c2 #17becf #bcbd22 #7f7f7f'
ptypes = '7 5 9 11 13 15 4 6 8 10'
col(i) = word(colors, (int(value(sprintf('c%d', i))) - 1) % words(colors) + 1)
pt(i) = int(word(ptypes, (i - 1) % words(ptypes) + 1))
fi(i) = value(sprintf('f%d', i))
ti(i) = value(sprintf('t%d', i))
ki(i) = value(sprintf('k%d', i))
hci(i) = exists(sprintf('h%d', i)) ? value(sprintf('h%d', i)) : 1
cfi(i) = value(sprintf('cf%d', i))
cli(i) = value(sprintf('cl%d', i))
ccol(i) = (i == 1 ? 'black' : '#666666')
gmi(i) = value(sprintf('gm%d', i))
gli(i) = value(sprintf('gl%d', i))
flat = ''
if (ngm > 0) { flat = ", for [i=1:ngm] gmi(i) with lines dt i + 2 lw 2 lc rgb '#444444' title gli(i)" }

set title (sub eq '' ? ttl : ttl . "\n" . sub)
set ylabel ylab
set yrange [0:*]
set grid ytics
set border 3
set tics nomirror
# the legend: right of the plot, or below it when the names are long
klen = 0
do for [i=1:n] { klen = (strlen(ki(i)) > klen ? strlen(ki(i)) : klen) }
if (klen > 28) {
    set key below left horizontal Left reverse noautotitle samplen 2 spacing 1.2 maxcols 2 height 1
} else {
    set key outside right top vertical Left reverse noautotitle samplen 2 spacing 1.2
}

if (mode eq 'line') {
    set xlabel xlab
    set grid xtics
    if (logx) { set logscale x 2 }
    set xrange [xlo:xhi]
    if (xt ne '') { eval sprintf('set xtics (%s)', xt) }
    if (xrot) { set xtics rotate by 90 right }
    cmd = "plot for [i=1:n] fi(i) using 1:2 with linespoints lw 2 pt pt(i) ps 1.2 lc rgb col(i) title ki(i)"
    if (nc > 0) {
        cmd = cmd . ", for [i=1:nc] cfi(i) using 1:2 with linespoints dt i + 1 lw 2 pt 7 ps 0.5 lc rgb ccol(i) title cli(i)"
    }
    eval cmd . flat
} else {
    set xrange [xlo:xhi]
    tlen = 0
    do for [i=1:n] { tlen = (strlen(ti(i)) > tlen ? strlen(ti(i)) : tlen) }
    if (n * tlen > 110) { set xtics () rotate by 30 right } else { set xtics () norotate center }
    do for [i=1:n] { set xtics add (ti(i) i) }
    set boxwidth 0.7
    set style fill solid 0.85 noborder
    set offsets 0, 0, graph 0.08, 0
    # (labels: an empty string rather than NaN, which crashes gnuplot 5.4.4)
    c = "plot for [i=1:n] fi(i) using (i):2 with boxes lc rgb col(i) title ki(i)"
    c = c . ", for [i=1:n] fi(i) using (i):2:($2 >= 0.12 * ymax ? sprintf('%.3g', $2) : '') with labels offset 0,-0.9 tc rgb 'white' notitle"
    c = c . ", for [i=1:n] fi(i) using (i):2:($2 < 0.12 * ymax ? sprintf('%.3g', $2) : '') with labels offset 0,0.8 notitle"
    # the size-matched ceiling's mark, for the series that have one (a file of
    # '?' alone is "no valid points", a warning, and the chart is not drawn)
    first = 1
    do for [i=1:n] {
        if (hci(i)) {
            c = c . sprintf(", fi(%d) using (%d - 0.42):3:(0.84):(0) with vectors nohead dt 2 lw 2 lc rgb 'black' title '%s'", i, i, first ? clabel : '')
            first = 0
        }
    }
    eval c . flat
}
