# ppbench report charts: the style every chart script loads (`load 'style.gp'`).
# Restyle every chart by editing this file, then re-render in this folder:
#   for f in *.gp; do [ "$f" = style.gp ] || gnuplot -d "$f"; done
# Compiled into ppbench from reports/style.gp; each report writes a copy beside its charts.

# The two outputs of every chart: inline SVG for the page, PNG for slides and issues.
# noenhanced: labels are printed as they are (an underscore is not a subscript).
# No `mouse`/`standalone` options: the SVG must hold no script and load nothing.
chart_font = 'sans,11'
svg_term(w, h) = sprintf("set terminal svg size %d,%d fixed noenhanced font '%s' linewidth 1.2 background rgb 'white'", w, h, chart_font)
png_term(w, h) = (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) \
    ? sprintf("set terminal pngcairo size %d,%d noenhanced font '%s' linewidth 1.2 background rgb 'white'", w, h, chart_font) \
    : sprintf("set terminal png size %d,%d noenhanced", w, h)

set encoding utf8
set border 3 lc rgb '#666666'
set tics nomirror textcolor rgb '#333333'
set grid xtics ytics mxtics mytics lc rgb '#e4e4e4' lw 1 dt 1, lc rgb '#f2f2f2' lw 1 dt 1
set key outside right top vertical Left reverse samplen 2 spacing 1.1 noenhanced
set title noenhanced font 'sans,12'
set datafile missing 'NaN'
set format x '%g'
set format y '%g'

# Series colours: Okabe-Ito, readable by colour-blind readers; then gnuplot cycles.
set linetype 1 lc rgb '#0072B2' lw 1.5 pt 7 ps 0.7
set linetype 2 lc rgb '#D55E00' lw 1.5 pt 5 ps 0.7
set linetype 3 lc rgb '#009E73' lw 1.5 pt 9 ps 0.8
set linetype 4 lc rgb '#CC79A7' lw 1.5 pt 11 ps 0.8
set linetype 5 lc rgb '#E69F00' lw 1.5 pt 13 ps 0.8
set linetype 6 lc rgb '#56B4E9' lw 1.5 pt 7 ps 0.7
set linetype 7 lc rgb '#000000' lw 1.5 pt 5 ps 0.7
set linetype 8 lc rgb '#F0E442' lw 1.5 pt 9 ps 0.8
set linetype cycle 8

# Fixed colours with a meaning.
colour_pass = '#009E73'
colour_fail = '#D55E00'
colour_alert = '#C00000'
colour_limit = '#555555'
colour_faster = '#009E73'
colour_slower = '#D55E00'
colour_same = '#777777'
colour_unresolved = '#E69F00'

# Heatmaps: 1 = the best config of its shape (green) to 2x slower and beyond (red).
set palette defined (1 '#1a9850', 1.1 '#a6d96a', 1.3 '#fee08b', 1.6 '#fc8d59', 2 '#d73027')

# Trend overview: a night's change against the case's reference, in the classes of the page's table
# (faster beyond 2 x min_change, beyond it, within it, slower beyond it, beyond 2 x): blue faster, red slower.
# The chart sets cbrange [-2.5:2.5]; each class is one flat colour, as in the table.
palette_change = "set palette defined (-2.5 '#2166ac', -1.5 '#2166ac', -1.5 '#92c5de', -0.5 '#92c5de', -0.5 '#f2f2f2', 0.5 '#f2f2f2', 0.5 '#f4a582', 1.5 '#f4a582', 1.5 '#b2182b', 2.5 '#b2182b')"

# A line break inside a label: the trend charts' tics read 'run ID'.nl.'commit', a title its lines joined so.
nl = "\n"
