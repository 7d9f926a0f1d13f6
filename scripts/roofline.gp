# The roofline of one kbench result file: every row a point (arithmetic
# intensity = flops / bytes of the op's models, against its TFLOP/s), under
# the roofs measured in that run: the copy bandwidth (sloped) and each
# dtype's GEMM ceiling (flat, from the ridge point on).
# scripts/plot.sh sets, through gnuplot -e:
#   out, ttl, sub    the PNG, the title and its second line
#   xlo, xhi, ylo, yhi   the axes' ranges (log-log)
#   copy             the sloped roof, GB/s (0: none)
#   ng               flat roofs, then gv<i> (TFLOP/s) and gl<i> (legend)
#   n                point series, then f<i> (data: intensity tflops),
#                    c<i> (colour: the implementation), p<i> (marker: the op)
#   ni, nop          legend entries: in<i>/ic<i> implementations and their
#                    colours, on<i>/op<i> ops and their markers
#   lf               a data file of labels: x y text (the best row of each op,
#                    its share of the roof above it), and nb, bl<i>: the same
#                    rows named, for the key

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 1100,700 font 'sans,10'
} else {
    set terminal png size 1100,700
}
set termoption noenhanced
set output out

colors = '#1f77b4 #d62728 #2ca02c #ff7f0e #9467bd #8c564b #e377c2 #17becf #bcbd22 #7f7f7f'
ptypes = '7 5 9 11 13 15 4 6 8 10'
cc(k) = word(colors, (k - 1) % words(colors) + 1)
pp(k) = int(word(ptypes, (k - 1) % words(ptypes) + 1))
vi(s, i) = value(sprintf('%s%d', s, i))

set title (sub eq '' ? ttl : ttl . "\n" . sub)
set xlabel 'arithmetic intensity (FLOP per byte moved, the op''s models)'
set ylabel 'TFLOP/s'
# a range of less than two decades gets tics at powers of 2 (decades alone
# would label one tic or none)
set logscale x (xhi / xlo < 100 ? 2 : 10)
set logscale y (yhi / ylo < 100 ? 2 : 10)
set xrange [xlo:xhi]
set yrange [ylo:yhi]
set format x '%g'
set format y '%g'
set grid xtics ytics mxtics mytics lc rgb '#dddddd'
set border 3
set tics nomirror
set samples 400
set key outside right top vertical Left reverse noautotitle samplen 2 spacing 1.2

gmax = 0
do for [i=1:ng] { gmax = (vi('gv', i) > gmax ? vi('gv', i) : gmax) }
roof(x) = (copy > 0 && (gmax <= 0 || x * copy / 1000 <= gmax)) ? x * copy / 1000 : 1/0
# the best row of each op, named: top left, above the sloped roof, where no row can be
best = ''
do for [i=1:nb] { best = best . (i == 1 ? 'best of each op (share of the roof above it):' : '') . "\n  " . vi('bl', i) }
if (nb > 0) { set label 1 best at graph 0.02, graph 0.97 left front font ',9' }
flat(x, g) = (copy <= 0 || x * copy / 1000 >= g) ? g : 1/0
cmd = "plot "
if (copy > 0) {
    cmd = cmd . sprintf("roof(x) with lines lw 2 lc rgb 'black' title 'copy %.0f GB/s', ", copy)
}
if (ng > 0) {
    cmd = cmd . "for [i=1:ng] flat(x, vi('gv', i)) with lines lw 2 dt i + 1 lc rgb '#444444' title vi('gl', i), "
}
cmd = cmd . "for [i=1:n] vi('f', i) using 1:2 with points pt pp(vi('p', i)) ps 1.4 lc rgb cc(vi('c', i)) notitle"
cmd = cmd . ", for [i=1:ni] keyentry with points pt 7 ps 1.4 lc rgb cc(vi('ic', i)) title vi('in', i)"
cmd = cmd . ", for [i=1:nop] keyentry with points pt pp(vi('op', i)) ps 1.4 lc rgb 'black' title vi('on', i)"
cmd = cmd . ", lf using 1:2:3 with labels left offset 0.8,0.7 font ',9' notitle"
eval cmd
