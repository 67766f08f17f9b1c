package sim

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/plan-dev/plan/dataplane"
)

// svgText renders p as SVG and returns its text.
func svgText(t *testing.T, p *plot.Plot) string {
	t.Helper()
	wt, err := p.WriterTo(16*vg.Centimeter, 10*vg.Centimeter, "svg")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func tickLabels(p *plot.Plot) []string {
	var ls []string
	for _, tk := range p.Y.Tick.Marker.Ticks(0, 0) {
		ls = append(ls, tk.Label)
	}
	return ls
}

// TestTimelineRows: every worker gets a row while they fit; past the limit a row is a
// stage with its batches packed into lanes, and no stage disappears.
func TestTimelineRows(t *testing.T) {
	s := runScenario(t, "nic.json", "reactive", []dataplane.Time{0, 0, 0, 0})
	cases := []struct {
		name  string
		limit int
		want  []string
	}{
		{"all", MaxTimelineRows, []string{"P4#1", "P4#2", "L4#0"}},
		{"grouped by stage", 2, []string{"(2 workers, ", "(1 worker, "}},
		{"stages cut on a counted row", 1, []string{"(2 workers, ", "… 1 more stages not shown"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := timelinePlot("t", s.Engine, 0, 50*ms, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(tickLabels(p), "|")
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("rows %q: no %q", got, w)
				}
			}
			if n := len(tickLabels(p)); n != len(c.want) {
				t.Errorf("rows %q: %d rows, want %d", got, n, len(c.want))
			}
			if svg := svgText(t, p); !strings.Contains(svg, c.want[len(c.want)-1]) {
				t.Errorf("SVG lacks the row %q", c.want[len(c.want)-1])
			}
		})
	}
}

// TestTimelineRowsBounded: a deployment of 180 workers over 20 stages (a DyOrc workflow's
// shape) is drawn in 20 rows, one of 200 stages in MaxTimelineRows.
func TestTimelineRowsBounded(t *testing.T) {
	cases := []struct{ workers, stages, want int }{
		{3, 2, 3},
		{MaxTimelineRows, 4, MaxTimelineRows},
		{180, 20, 20},
		{200, 200, MaxTimelineRows},
	}
	for _, c := range cases {
		dep := &dataplane.Deployment{}
		for i := 0; i < c.workers; i++ {
			dep.Topo.Workers = append(dep.Topo.Workers, dataplane.Worker{Stage: dataplane.StageID(i % c.stages)})
		}
		if got := TimelineRows(dep); got != c.want {
			t.Errorf("%d workers in %d stages: %d rows, want %d", c.workers, c.stages, got, c.want)
		}
	}
}

// TestPackLanes: overlapping hops take separate lanes, a hop starting when another's
// transfer ends reuses its lane.
func TestPackLanes(t *testing.T) {
	ss := []hopSpan{
		{s: 0, e: 2, os: 2, oe: 3},
		{s: 1, e: 4, os: -1},
		{s: 3, e: 5, os: -1},
		{s: 1.5, e: 2, os: -1},
	}
	lane, n := packLanes(ss)
	if want := []int{0, 1, 0, 2}; n != 3 || fmt.Sprint(lane) != fmt.Sprint(want) {
		t.Errorf("lanes %v (%d), want %v (3)", lane, n, want)
	}
}

// TestLegendOutside: SavePlot draws every legend entry right of the data area.
func TestLegendOutside(t *testing.T) {
	p, err := AttainmentPlot("t", []Curve{{Name: "legend-entry", Loads: []float64{0.5, 1}, Values: []float64{1, 0.9}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := SavePlot(p, dir, "a", 16*vg.Centimeter, 10*vg.Centimeter)
	if err != nil || len(files) != 2 {
		t.Fatalf("SavePlot: %v %v", files, err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "a.svg"))
	if err != nil {
		t.Fatal(err)
	}
	// Every point glyph (the data's and the legend thumbnail's) lies left of the legend
	// text; a legend inside the data area would start left of the rightmost data point.
	x := legendTextX(t, string(svg), "legend-entry")
	glyphs := regexp.MustCompile(`M([0-9.]+),[0-9.]+A2,2 `).FindAllStringSubmatch(string(svg), -1)
	if len(glyphs) < 3 {
		t.Fatalf("%d point glyphs in the SVG, want the 2 data points and the legend's", len(glyphs))
	}
	for _, g := range glyphs {
		if gx, _ := strconv.ParseFloat(g[1], 64); gx >= x {
			t.Errorf("a point at x=%.1f is right of the legend text (x=%.1f): the legend is over the data", gx, x)
		}
	}
	if !strings.Contains(string(svg), "99% target") {
		t.Error("no target line in the legend")
	}
}

// legendTextX returns the x of the SVG text element holding text.
func legendTextX(t *testing.T, svg, text string) float64 {
	t.Helper()
	i := strings.Index(svg, ">"+text+"<")
	if i < 0 {
		t.Fatalf("SVG lacks %q", text)
	}
	open := strings.LastIndex(svg[:i], "<text")
	m := regexp.MustCompile(`x="([0-9.]+)"|translate\(([0-9.]+)`).FindStringSubmatch(svg[open:i])
	if m == nil {
		t.Fatalf("no x in %q", svg[open:i])
	}
	v := m[1] + m[2]
	x, _ := strconv.ParseFloat(v, 64)
	return x
}

// TestTimelineLegend: the timeline names its colours.
func TestTimelineLegend(t *testing.T) {
	s := runScenario(t, "nic.json", "reactive", []dataplane.Time{0, 0, 0, 0})
	p, err := TimelinePlot("t", s.Engine, 0, 50*ms)
	if err != nil {
		t.Fatal(err)
	}
	svg := svgText(t, p)
	app := s.Engine.Deployment().Apps[0].Name
	for _, w := range []string{">" + app + "<", ">NIC transfer<"} {
		if !strings.Contains(svg, w) {
			t.Errorf("SVG lacks legend entry %q", w)
		}
	}
}

// TestAttainmentAxis: the y-axis starts near the lowest attainment, not at 0, and keeps
// the 99% target visible.
func TestAttainmentAxis(t *testing.T) {
	cases := []struct {
		name   string
		values []float64
		want   float64
	}{
		{"all high", []float64{1, 0.995, 0.97}, 95},
		{"just above 90", []float64{1, 0.934}, 92},
		{"below 90", []float64{1, 0.87}, 70},
		{"collapse", []float64{1, 0.02}, 0},
		{"all perfect", []float64{1, 1}, 95},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loads := make([]float64, len(c.values))
			for i := range loads {
				loads[i] = 0.5 + 0.25*float64(i)
			}
			p, err := AttainmentPlot("t", []Curve{{Name: "all", Loads: loads, Values: c.values}})
			if err != nil {
				t.Fatal(err)
			}
			if p.Y.Min != c.want || p.Y.Max < 100 {
				t.Errorf("y axis %g–%g, want %g–≥100", p.Y.Min, p.Y.Max, c.want)
			}
			// A cut axis says where it starts; a full one says nothing.
			if note := fmt.Sprintf("(axis from %g%%)", c.want); (c.want > 0) != strings.Contains(p.Y.Label.Text, note) {
				t.Errorf("y label %q, want the note %q only when cut", p.Y.Label.Text, note)
			}
		})
	}
}

// TestTimelineWindow: the window comes from the data, scaled to the requests' latency and
// placed on the busiest stretch of complete requests, not fixed at a third of the run
// (QLM's and DyOrc's multi-second requests left 10.0–10.2 s empty).
func TestTimelineWindow(t *testing.T) {
	sec := dataplane.Second
	many := func(n int, at, lat, gap dataplane.Time) []reqSpan {
		var ss []reqSpan
		for i := 0; i < n; i++ {
			a := at + dataplane.Time(i)*gap
			ss = append(ss, reqSpan{a, a + lat})
		}
		return ss
	}
	cases := []struct {
		name     string
		spans    []reqSpan
		from, to dataplane.Time // the window must contain [from, to]
		width    dataplane.Time
	}{
		{"none: a third into the run", nil, 10 * sec, 10*sec + 200*ms, 200 * ms},
		{"vision: 200 ms on the burst", append(many(3, 1*sec, 20*ms, 100*ms), many(20, 25*sec, 20*ms, 5*ms)...),
			25 * sec, 25*sec + 115*ms, 200 * ms},
		{"LLM: three median latencies on the busy stretch", append(many(5, 2*sec, 4*sec, 3*sec), many(10, 20*sec, 4*sec, 200*ms)...),
			20 * sec, 25*sec + 800*ms, 12 * sec},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			from, to := windowOf(c.spans, 30*sec)
			if to-from != c.width || from > c.from || to < c.to {
				t.Errorf("window %v–%v, want %v wide containing %v–%v", from, to, c.width, c.from, c.to)
			}
		})
	}
}

// TestTimelineWindowRun: on a real run the window holds the requests, wherever they came.
func TestTimelineWindowRun(t *testing.T) {
	s := runScenario(t, "one-gpu.json", "ppipe", []dataplane.Time{700 * ms, 701 * ms, 702 * ms})
	from, to := TimelineWindow(s.Engine, dataplane.Second)
	for _, r := range s.Engine.Requests() {
		if r.Outcome == dataplane.Completed && (r.Arrival < from || r.Done > to) {
			t.Errorf("window %v–%v misses r%d (%v–%v)", from, to, r.ID, r.Arrival, r.Done)
		}
	}
}

// TestCoincidentSeriesStayVisible: two series on the same points are drawn apart — the
// second dashed, narrower, with another glyph — so the first shows through; an LLM class
// has one colour in the timeline and the CDFs (AppColors).
func TestCoincidentSeriesStayVisible(t *testing.T) {
	same := []float64{1, 0.95}
	p, err := AttainmentPlot("t", []Curve{{Name: "least-cost", Loads: []float64{0.5, 1}, Values: same}, {Name: "single type", Loads: []float64{0.5, 1}, Values: same}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := SavePlot(p, dir, "c", 16*vg.Centimeter, 10*vg.Centimeter); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "c.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), "stroke-dasharray") {
		t.Error("the second of two coinciding series is not dashed")
	}
	dep := &dataplane.Deployment{Apps: []dataplane.App{{Name: "chat"}, {Name: "batch"}}}
	c := AppColors(dep)
	if c["chat"] != palette[appColorIndex(0, 0)] || c["batch"] != palette[appColorIndex(1, 0)] || c["chat"] == c["batch"] {
		t.Errorf("class colours %v: want the timeline's per app", c)
	}
	if seriesColor(c, "batch", 0) != c["batch"] || seriesColor(c, "all", 2) != palette[2] {
		t.Error("CDF series colours do not follow the classes'")
	}
}
