package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"time"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// The chart is drawn by hand on an image.RGBA: a line chart with a handful
// of series needs lines, dots and fixed-width text, which the standard
// library and x/image's basicfont cover. A plotting library (gonum/plot)
// would pull in a font stack and a PDF/SVG toolchain for one PNG.

var seriesColor = map[string]color.RGBA{
	sysFloor:        {110, 110, 110, 255},
	sysSDK:          {31, 119, 180, 255},
	sysMCPGate:      {44, 160, 44, 255},
	sysMCPGateTLS:   {255, 127, 14, 255},
	sysSupergateway: {214, 39, 40, 255},
	sysSDKStateless: {23, 190, 207, 255},
}

// extraColors are for variants (-variant), in the order they appear.
var extraColors = []color.RGBA{
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {188, 189, 34, 255},
}

const (
	chartW      = 960
	panelH      = 400
	marginL     = 80
	marginR     = 170 // legend
	marginT     = 40
	marginB     = 50
	pointRadius = 3
)

// canvas is an image with the few drawing operations the chart needs.
type canvas struct{ img *image.RGBA }

func (c canvas) dot(x, y, r int, col color.Color) {
	for dy := -r; dy <= r; dy++ {
		for dx := -r; dx <= r; dx++ {
			if dx*dx+dy*dy <= r*r {
				c.img.Set(x+dx, y+dy, col)
			}
		}
	}
}

// line draws from (x0,y0) to (x1,y1) with the given thickness; dash > 0
// draws dash pixels on, dash pixels off.
func (c canvas) line(x0, y0, x1, y1, thick, dash int, col color.Color) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for i := 0; ; i++ {
		if dash == 0 || (i/dash)%2 == 0 {
			c.dot(x0, y0, thick/2, col)
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x0 += sx
		} else {
			e += dx
			y0 += sy
		}
	}
}

func (c canvas) text(x, y int, s string, col color.Color) {
	d := font.Drawer{Dst: c.img, Src: image.NewUniform(col), Face: basicfont.Face7x13,
		Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func (c canvas) textWidth(s string) int {
	return font.MeasureString(basicfont.Face7x13, s).Round()
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// A panel is one chart: latency of each system at each x.
type panel struct {
	title, xTitle string
	xs            []int
	get           func(s *SystemResult, x int) *Summary // nil: nothing measured
}

// Chart draws tools/call latency (p50 solid, p99 dashed, log scale) against
// concurrent sessions, one panel per tool, one line per system; then, when
// the stateless phase ran, its latency against the users its clients act
// as, one panel per tool.
func Chart(r *Run) ([]byte, error) {
	tools := []Tool{r.Config.Trivial}
	if r.Config.Realistic != nil {
		tools = append(tools, *r.Config.Realistic)
	}
	var panels []panel
	for _, tool := range tools {
		panels = append(panels, panel{
			title:  fmt.Sprintf("tools/call %s latency vs concurrent sessions (p50 solid, p99 dashed; log scale)", tool.Name),
			xTitle: "concurrent sessions", xs: r.Config.Concurrency,
			get: func(s *SystemResult, n int) *Summary {
				if l := s.load(tool.Label, n); l != nil {
					return &l.Latency
				}
				return nil
			}})
	}
	modern := false
	for _, s := range r.Systems {
		modern = modern || len(s.Modern) > 0
	}
	for _, tool := range tools {
		if !modern {
			break
		}
		panels = append(panels, panel{
			title: fmt.Sprintf("MCP 2026-07-28: %s latency, %d stateless clients, vs users (p50 solid, p99 dashed; log scale)",
				tool.Name, r.Config.ModernClients),
			xTitle: "users", xs: r.Config.ModernUsers,
			get: func(s *SystemResult, u int) *Summary {
				if m := s.modern(tool.Label, u); m != nil {
					return &m.Latency
				}
				return nil
			}})
	}
	img := image.NewRGBA(image.Rect(0, 0, chartW, panelH*len(panels)))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	c := canvas{img}
	for i, p := range panels {
		drawPanel(c, r, p, i*panelH)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("mcpbench: encode chart: %w", err)
	}
	return buf.Bytes(), nil
}

func drawPanel(c canvas, r *Run, p panel, top int) {
	conc := p.xs
	black := color.RGBA{0, 0, 0, 255}
	grey := color.RGBA{225, 225, 225, 255}
	x0, x1 := marginL, chartW-marginR
	y0, y1 := top+marginT, top+panelH-marginB // y0 top of plot, y1 bottom

	// Y range: decades that cover every p50 and p99 drawn.
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range r.Systems {
		for _, x := range conc {
			l := p.get(&r.Systems[i], x)
			if l == nil || l.Count == 0 {
				continue
			}
			lo = math.Min(lo, us(l.P50))
			hi = math.Max(hi, us(l.P99))
		}
	}
	c.text(x0, top+22, p.title, black)
	if math.IsInf(lo, 1) {
		c.text(x0, (y0+y1)/2, "no measurements", black)
		return
	}
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	yOf := func(v float64) int {
		f := (math.Log10(v) - dlo) / (dhi - dlo)
		return y1 - int(f*float64(y1-y0)+0.5)
	}
	xOf := func(i int) int {
		if len(conc) == 1 {
			return (x0 + x1) / 2
		}
		return x0 + 30 + i*(x1-x0-60)/(len(conc)-1)
	}
	// Grid: 1, 2 and 5 of each decade.
	for d := dlo; d <= dhi; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if math.Log10(v) > dhi+1e-9 {
				continue
			}
			y := yOf(v)
			c.line(x0, y, x1, y, 1, 0, grey)
			label := fmtAxis(v)
			c.text(x0-8-c.textWidth(label), y+4, label, black)
		}
	}
	c.line(x0, y0, x0, y1, 1, 0, black)
	c.line(x0, y1, x1, y1, 1, 0, black)
	for i, n := range conc {
		x := xOf(i)
		c.line(x, y1, x, y1+4, 1, 0, black)
		l := fmt.Sprint(n)
		c.text(x-c.textWidth(l)/2, y1+18, l, black)
	}
	c.text((x0+x1)/2-c.textWidth(p.xTitle)/2, y1+38, p.xTitle, black)
	c.text(8, y0-8, "latency", black)

	legendY := y0 + 10
	extra := 0 // variants take the next of extraColors
	for i := range r.Systems {
		s := &r.Systems[i]
		if s.Skipped != "" {
			continue
		}
		col, ok := seriesColor[s.Name]
		if !ok {
			col = extraColors[extra%len(extraColors)]
			extra++
		}
		drawn := false
		for _, q := range []struct {
			get         func(Summary) time.Duration
			thick, dash int
		}{{func(s Summary) time.Duration { return s.P50 }, 3, 0}, {func(s Summary) time.Duration { return s.P99 }, 1, 6}} {
			px, py := -1, -1
			for i, n := range conc {
				l := p.get(s, n)
				if l == nil || l.Count == 0 {
					px = -1
					continue
				}
				x, y := xOf(i), yOf(us(q.get(*l)))
				if px >= 0 {
					c.line(px, py, x, y, q.thick, q.dash, col)
				}
				c.dot(x, y, pointRadius, col)
				px, py = x, y
				drawn = true
			}
		}
		if drawn {
			c.line(x1+15, legendY, x1+40, legendY, 3, 0, col)
			c.text(x1+48, legendY+4, s.Name, black)
			legendY += 20
		}
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// fmtAxis labels a latency tick given in µs.
func fmtAxis(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gs", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gms", v/1e3)
	default:
		return fmt.Sprintf("%gus", v)
	}
}
