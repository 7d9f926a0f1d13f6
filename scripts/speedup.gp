# kbench compare as a chart: one horizontal bar per matched case, its speedup
# (base median / new median) from 1, sorted; behind each bar the band its rule
# calls "same"; regressions in red.
# scripts/plot.sh sets, through gnuplot -e:
#   out, ttl, sub   the PNG, the title and its further lines
#   df              the data: rank speedup band_lo band_hi colour "label"
#   n               the number of cases (rows of df)
#   xlo, xhi        the x range
#   h               the image's height in pixels

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 1400,h font 'sans,9'
} else {
    set terminal png size 1400,h
}
set termoption noenhanced
set output out
# the title and the runs, left-aligned above the plot (the case labels take the left)
set tmargin 7
set label 1 ttl at screen 0.01, screen 1 - 14.0 / h left offset 0,0 font ',11'
set label 2 sub at screen 0.01, screen 1 - 32.0 / h left
set xlabel 'speedup (base median / new median): right of 1 is faster'
set xrange [xlo:xhi]
set yrange [n + 0.7:0.3]
set ytics scale 0
set grid xtics lc rgb '#dddddd'
set border 1
set tics nomirror
set key outside right top vertical Left reverse noautotitle samplen 2 spacing 1.2
set arrow 1 from 1, graph 0 to 1, graph 1 nohead lc rgb 'black' lw 1 front
set style fill solid 1.0 noborder
plot df using (($3 + $4) / 2):1:(($4 - $3) / 2):(0.46) with boxxyerror lc rgb '#e3e3e3' title 'same (the rule''s band)', \
     df using (($2 + 1) / 2):1:(abs($2 - 1) / 2):(0.34):5:ytic(6) with boxxyerror lc rgb variable notitle, \
     keyentry with boxes lc rgb '#2ca02c' title 'faster', \
     keyentry with boxes lc rgb '#d62728' title 'slower (a regression)', \
     keyentry with boxes lc rgb '#7f7f7f' title 'same', \
     keyentry with boxes lc rgb '#6a0dad' title 'FAILED (a regression)'
