package sim

import (
	"fmt"
	"image/color"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/plan-dev/plan/dataplane"
)

// gantt draws busy intervals as bars, one row per worker.
type gantt struct {
	bars       []bar
	rows       int
	from, till float64
}

type bar struct {
	row  int
	s, e float64
	c    color.Color
}

func (g *gantt) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for _, b := range g.bars {
		x0, x1 := trX(b.s), trX(b.e)
		y0, y1 := trY(float64(b.row)-0.38), trY(float64(b.row)+0.38)
		poly := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.FillPolygon(b.c, c.ClipPolygonXY(poly))
	}
}

func (g *gantt) DataRange() (xmin, xmax, ymin, ymax float64) {
	return g.from, g.till, -0.5, float64(g.rows) - 0.5
}

// swatch is a legend thumbnail: a filled box in one colour.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(s.c, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

// MaxTimelineRows bounds the worker rows of a timeline plot, so a 1,600-GPU run still
// gives an image a person can open; the workers past it are counted on an explicit
// "N more" row (issue 37 item 4: rows were once cut silently).
const MaxTimelineRows = 160

// timelineWorkers returns the workers a timeline shows, ordered by stage then ID, at most
// limit of them, and how many more the deployment has. When it must cut, it keeps every
// stage's first worker before any stage's second one (round robin over stages), so no
// application or stage disappears from the picture (PARD's da, DyOrc's card services).
func timelineWorkers(dep *dataplane.Deployment, limit int) (ws []int, more int) {
	byStage := map[dataplane.StageID][]int{}
	var stages []dataplane.StageID
	n := 0
	for i := range dep.Topo.Workers {
		st := dep.Topo.Workers[i].Stage
		if st < 0 {
			continue
		}
		if _, ok := byStage[st]; !ok {
			stages = append(stages, st)
		}
		byStage[st] = append(byStage[st], i)
		n++
	}
	sort.Slice(stages, func(a, b int) bool { return stages[a] < stages[b] })
	if n <= limit {
		for _, st := range stages {
			ws = append(ws, byStage[st]...)
		}
		return ws, 0
	}
	// Round robin: take the k-th worker of every stage before any stage's (k+1)-th.
	take := map[dataplane.StageID]int{}
	for k, left := 0, limit; left > 0; k++ {
		for _, st := range stages {
			if left > 0 && k < len(byStage[st]) {
				take[st]++
				left--
			}
		}
	}
	for _, st := range stages {
		ws = append(ws, byStage[st][:take[st]]...)
	}
	return ws, n - limit
}

// TimelineRows returns how many rows a timeline of dep has (the "N more" row included).
func TimelineRows(dep *dataplane.Deployment) int {
	ws, more := timelineWorkers(dep, MaxTimelineRows)
	if more > 0 {
		return len(ws) + 1
	}
	return len(ws)
}

// seriesName names the colour of a batch's (app, pipeline): the app alone when it has one
// pipeline (or none), else "app p<N>".
func seriesName(dep *dataplane.Deployment, app dataplane.AppID, pl int, multi map[dataplane.AppID]bool) string {
	name := fmt.Sprintf("app %d", app)
	if int(app) < len(dep.Apps) {
		name = dep.Apps[app].Name
	}
	if multi[app] && pl >= 0 {
		name += fmt.Sprintf(" p%d", pl)
	}
	return name
}

// TimelinePlot draws, like PPipe's Figure 12, what every (v)GPU worker executed over
// [from, to): one row per worker (grouped by stage), one bar per batch, colored by the
// batch's pipeline; NIC transfers are drawn as thin grey bars on the sender's row. A
// legend names each colour; workers past MaxTimelineRows are counted on a last row.
func TimelinePlot(title string, e *dataplane.Engine, from, to dataplane.Time) (*plot.Plot, error) {
	return timelinePlot(title, e, from, to, MaxTimelineRows)
}

func timelinePlot(title string, e *dataplane.Engine, from, to dataplane.Time, limit int) (*plot.Plot, error) {
	dep := e.Deployment()
	ws, more := timelineWorkers(dep, limit)
	rows := len(ws)
	if more > 0 {
		rows++
	}
	row := map[dataplane.WorkerID]int{}
	ticks := make([]plot.Tick, 0, rows)
	for r, w := range ws {
		row[dataplane.WorkerID(w)] = r
		wk := dep.Topo.Workers[w]
		ticks = append(ticks, plot.Tick{Value: float64(r), Label: fmt.Sprintf("%s %s", dep.Stages[wk.Stage].Name, wk.Name)})
	}
	if more > 0 {
		ticks = append(ticks, plot.Tick{Value: float64(len(ws)), Label: fmt.Sprintf("… %d more workers not shown", more)})
	}
	pipelines := map[dataplane.AppID]map[int]bool{}
	for _, st := range dep.Stages {
		if pipelines[st.App] == nil {
			pipelines[st.App] = map[int]bool{}
		}
		pipelines[st.App][st.Pipeline] = true
	}
	multi := map[dataplane.AppID]bool{}
	for a, pls := range pipelines {
		multi[a] = len(pls) > 1
	}
	// Milliseconds, or seconds for windows of seconds (LLM and workflow runs).
	unit, div := "ms", 1e3
	if to-from >= 2*dataplane.Second {
		unit, div = "s", 1e6
	}
	ms := func(t dataplane.Time) float64 { return float64(t) / div }
	g := &gantt{rows: rows, from: ms(from), till: ms(to)}
	grey := color.Gray{0xa0}
	// legend: the names drawn in each palette colour, in first-seen order.
	var used []int
	names := map[int][]string{}
	transfers := false
	for _, b := range e.Batches() {
		for _, h := range b.Hops {
			r, ok := row[h.Worker]
			if !ok || h.Start < 0 || h.End <= from || h.Start >= to {
				continue
			}
			st := dep.Stages[h.Stage]
			// The batch's app, not the stage's: a shared stage (QLM's LLM instances)
			// serves several apps, and a batch holds one app's requests.
			ci := (max(st.Pipeline, 0) + int(b.App)*3) % len(palette)
			g.bars = append(g.bars, bar{row: r, s: ms(max(h.Start, from)), e: ms(min(h.End, to)), c: palette[ci]})
			nm := seriesName(dep, b.App, st.Pipeline, multi)
			if _, ok := names[ci]; !ok {
				used = append(used, ci)
			}
			if !contains(names[ci], nm) {
				names[ci] = append(names[ci], nm)
			}
			if h.OutStart >= 0 && h.OutEnd > from && h.OutStart < to {
				g.bars = append(g.bars, bar{row: r, s: ms(max(h.OutStart, from)), e: ms(min(h.OutEnd, to)), c: grey})
				transfers = true
			}
		}
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (" + unit + ")"
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Tick.Label.Font.Size = vg.Points(7)
	// The legend sits in a blank margin right of the window (a fifth of its width), so
	// it never hides a bar.
	p.X.Min, p.X.Max = ms(from), ms(to)+0.25*(ms(to)-ms(from))
	p.Add(g)
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(7)
	for _, ci := range used {
		p.Legend.Add(strings.Join(names[ci], ", "), swatch{palette[ci]})
	}
	if transfers {
		p.Legend.Add("NIC transfer", swatch{grey})
	}
	if len(used) == 0 {
		p.Legend.Add("(no batch ran in this window)", swatch{color.White})
	}
	return p, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// MinTimelineWindow is the narrowest timeline window: 200 ms shows a few dozen batches of
// a vision pipeline (PPipe's Figure 12 spans about that).
const MinTimelineWindow = 200 * dataplane.Millisecond

// TimelineWindow chooses a timeline's window from a finished run's requests: as wide as
// three median end-to-end latencies (at least MinTimelineWindow), placed where it holds
// the most complete requests (arrival and finish both inside), so an LLM run (QLM) or a
// workflow (DyOrc) whose requests last seconds shows whole requests rather than a fixed
// 10.0–10.2 s slice of one (issue 37 item 4). fallback is the run's length: with no
// finished request the window starts a third into it.
func TimelineWindow(e *dataplane.Engine, fallback dataplane.Time) (from, to dataplane.Time) {
	var spans []reqSpan
	reqs := e.Requests()
	for i := range reqs {
		if r := &reqs[i]; r.Outcome == dataplane.Completed || r.Outcome == dataplane.Late {
			spans = append(spans, reqSpan{r.Arrival, r.Done})
		}
	}
	return windowOf(spans, fallback)
}

// reqSpan is one finished request's life: arrival to finish.
type reqSpan struct{ arrival, done dataplane.Time }

func windowOf(spans []reqSpan, fallback dataplane.Time) (from, to dataplane.Time) {
	if len(spans) == 0 {
		return fallback / 3, fallback/3 + MinTimelineWindow
	}
	lat := make([]dataplane.Time, len(spans))
	var end dataplane.Time
	for i, s := range spans {
		lat[i] = s.done - s.arrival
		end = max(end, s.done)
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	w := max(MinTimelineWindow, 3*lat[len(lat)/2])
	// Slide the window in steps of w/8: a request fits the windows starting in
	// [done-w, arrival]; a difference array counts them all in one pass.
	step := max(w/8, 1)
	k := int(end/step) + 2
	diff := make([]int, k+1)
	for _, s := range spans {
		if s.done-s.arrival > w {
			continue
		}
		lo := max(0, int((s.done-w+step-1)/step))
		hi := int(s.arrival / step)
		if lo <= hi {
			diff[lo]++
			diff[min(hi+1, k)]--
		}
	}
	best, bestN, n := 0, -1, 0
	for i := 0; i < k; i++ {
		n += diff[i]
		if n > bestN {
			best, bestN = i, n
		}
	}
	from = dataplane.Time(best) * step
	// Past the last finish there is nothing to draw: slide back (every request counted
	// stays inside, since none finishes after end).
	if from+w > end {
		from = max(0, end-w)
	}
	return from, from + w
}
