package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// writeReport writes the suite's results as Markdown: per scenario a table
// of the medians over rounds, each metric for each target ("-" where a
// target lacks it) and how many times better the first target did than
// each other one, then how the headline metric's cost grew with the size,
// and the server's CPU time per operation where it was measured, and the
// plot if there is one.
func writeReport(w io.Writer, picked []scenario, targets []target, res results, rounds int, plots string) {
	fmt.Fprintf(w, "Medians of %d rounds, the servers measured in turn within each round. ", rounds)
	fmt.Fprintf(w, "A ratio is how many times better %s did than the other: its rate divided by the other's, "+
		"or the other's time divided by its time.\n", targets[0].name)
	for _, sc := range picked {
		fmt.Fprintf(w, "\n**%s**: %s.\n\n", sc.name, sc.title)
		head := []string{sc.size}
		for _, m := range sc.metrics {
			for _, t := range targets {
				head = append(head, m.name+" "+t.name)
			}
			for _, t := range targets[1:] {
				head = append(head, "× "+t.name)
			}
		}
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for si, size := range sc.sizes {
			row := []string{fmt.Sprint(size)}
			for _, m := range sc.metrics {
				meds := make([]float64, len(targets))
				have := make([]bool, len(targets))
				for ti := range targets {
					meds[ti], have[ti] = res.median(sc.name, m.name, si, ti)
					cell := "-"
					if have[ti] {
						cell = m.format(meds[ti])
					}
					row = append(row, cell)
				}
				for ti := 1; ti < len(targets); ti++ {
					cell := "-"
					if have[0] && have[ti] {
						cell = ratio(m, meds[0], meds[ti])
					}
					row = append(row, cell)
				}
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
		if line, ok := growth(sc, sc.metrics[0], targets, res); ok {
			fmt.Fprintf(w, "\n%s\n", line)
		}
		if i := slices.IndexFunc(sc.metrics, func(m metric) bool { return m.name == cpuMetric }); i >= 0 {
			if line, ok := growth(sc, sc.metrics[i], targets, res); ok {
				fmt.Fprintf(w, "\n%s\n", line)
			}
		}
		if plots != "" {
			fmt.Fprintf(w, "\n![%s](%s)\n", sc.name, filepath.ToSlash(filepath.Join(plots, plotFile(sc))))
		}
	}
}

// ratio says how many times better a did than b on metric m; "-" where
// either is not positive.
func ratio(m metric, a, b float64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	r := a / b
	if !m.higher {
		r = b / a
	}
	return fmt.Sprintf("%.1f×", r)
}

// growth says how each target's cost on metric m (the headline's, or the
// server's CPU time per operation) grew with the size, against the least
// it must grow. It takes the first and the last size at which every
// target that has m measured a positive median (the CPU time, counted in
// 10 ms clock ticks, can be 0 at a small size); targets without m are
// left out. ok is false, and there is no line, with fewer than two such
// sizes.
func growth(sc scenario, m metric, targets []target, res results) (line string, ok bool) {
	var measured []int // the targets that have m
	for ti := range targets {
		for si := range sc.sizes {
			if _, ok := res.median(sc.name, m.name, si, ti); ok {
				measured = append(measured, ti)
				break
			}
		}
	}
	lo, hi := -1, -1
	for si := range sc.sizes {
		positive := true
		for _, ti := range measured {
			if v, ok := res.median(sc.name, m.name, si, ti); !ok || v <= 0 {
				positive = false
			}
		}
		if positive {
			if lo < 0 {
				lo = si
			}
			hi = si
		}
	}
	if len(measured) == 0 || lo == hi {
		return "", false
	}
	first, last := sc.sizes[lo], sc.sizes[hi]
	scale := float64(last) / float64(first)
	must := math.Pow(scale, sc.grows)
	var parts []string
	for _, ti := range measured {
		a, _ := res.median(sc.name, m.name, lo, ti)
		b, _ := res.median(sc.name, m.name, hi, ti)
		g := b / a
		if m.higher {
			g = a / b // time per operation
		}
		verdict := "in proportion"
		switch {
		case g > 1.5*must:
			verdict = "faster than it must"
		case sc.grows == 0 && g < 1.5:
			verdict = "flat"
		}
		parts = append(parts, fmt.Sprintf("%s ×%.2f (%s)", targets[ti].name, g, verdict))
	}
	what := "cost per operation"
	if !m.higher {
		what = m.name
	}
	return fmt.Sprintf("From %d to %d %s (×%.3g), %s grew: %s; the least it must grow is ×%.3g.",
		first, last, sc.size, scale, what, strings.Join(parts, ", "), must), true
}

func plotFile(sc scenario) string { return "suite-" + sc.name + ".svg" }

// writePlots draws each scenario's headline metric against its size, one
// line per target, as an SVG file in dir.
func writePlots(dir string, picked []scenario, targets []target, res results) error {
	colors := []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	}
	for _, sc := range picked {
		m := sc.metrics[0]
		p := plot.New()
		p.Title.Text = sc.name
		p.X.Label.Text = sc.size
		p.Y.Label.Text = m.name
		// A tick at each size measured, with room on either side.
		var ticks []plot.Tick
		for _, size := range sc.sizes {
			ticks = append(ticks, plot.Tick{Value: float64(size), Label: fmt.Sprint(size)})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		first, last := float64(sc.sizes[0]), float64(sc.sizes[len(sc.sizes)-1])
		if last >= 10*first {
			p.X.Scale = plot.LogScale{}
			p.X.Min, p.X.Max = first/1.5, last*1.5
		} else {
			p.X.Min, p.X.Max = first-(last-first)/10, last+(last-first)/10
		}
		lo, hi := math.Inf(1), 0.0
		for ti, t := range targets {
			var pts plotter.XYs // the sizes the target has the metric at
			for si, size := range sc.sizes {
				if v, ok := res.median(sc.name, m.name, si, ti); ok {
					pts = append(pts, plotter.XY{X: float64(size), Y: v})
					lo, hi = min(lo, v), max(hi, v)
				}
			}
			if len(pts) == 0 {
				continue
			}
			line, points, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			c := colors[ti%len(colors)]
			line.Color, points.Color = c, c
			points.Shape = draw.CircleGlyph{}
			p.Add(line, points)
			p.Legend.Add(t.name, line, points)
		}
		// Room above the lines for the legend, top left.
		if lo > 0 && hi/lo > 20 {
			p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
			p.Y.Min, p.Y.Max = lo/1.5, hi*6
		} else {
			p.Y.Min, p.Y.Max = 0, hi*1.35
		}
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(4)
		if err := p.Save(5*vg.Inch, 3.2*vg.Inch, filepath.Join(dir, plotFile(sc))); err != nil {
			return err
		}
	}
	return nil
}
