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
	"github.com/plan-dev/plan/internal/base/quantile"
)

// gantt draws busy intervals as bars, one row per worker or, grouped, one row per stage
// whose bars are packed into lanes.
type gantt struct {
	bars       []bar
	rows       int
	from, till float64
}

// bar is one busy interval on a row; lane of lanes splits the row's height (packed rows).
type bar struct {
	row         int
	lane, lanes int
	s, e        float64
	c           color.Color
}

func (g *gantt) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for _, b := range g.bars {
		lanes := max(b.lanes, 1)
		h := 0.76 / float64(lanes)
		lo := float64(b.row) - 0.38 + h*float64(b.lane)
		x0, x1 := trX(b.s), trX(b.e)
		y0, y1 := trY(lo+0.04*h), trY(lo+0.96*h)
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

// MaxTimelineRows bounds a timeline's rows to about a screenful. A deployment with more
// workers than that is drawn one row per stage, its batches packed into lanes (a DyOrc
// workflow of 20 services spread over 180 workers then reads as 20 rows); a deployment
// with more stages than that still counts the stages it leaves out on an explicit
// "N more" row, never cutting silently.
const MaxTimelineRows = 40

// timelineLayout is what a timeline's rows are: one per worker (workers), or, grouped,
// one per stage (stages, each with its workers); more counts what is left out.
type timelineLayout struct {
	workers []int
	stages  []dataplane.StageID
	members map[dataplane.StageID][]int
	more    int
}

func (l *timelineLayout) rows() int {
	n := len(l.workers) + len(l.stages)
	if l.more > 0 {
		n++
	}
	return n
}

// layoutTimeline orders dep's workers by stage then ID: one row each when they fit in
// limit rows, else one row per stage (the first limit-1 stages when even those do not
// fit, the rest counted).
func layoutTimeline(dep *dataplane.Deployment, limit int) *timelineLayout {
	l := &timelineLayout{members: map[dataplane.StageID][]int{}}
	var stages []dataplane.StageID
	n := 0
	for i := range dep.Topo.Workers {
		st := dep.Topo.Workers[i].Stage
		if st < 0 {
			continue
		}
		if _, ok := l.members[st]; !ok {
			stages = append(stages, st)
		}
		l.members[st] = append(l.members[st], i)
		n++
	}
	sort.Slice(stages, func(a, b int) bool { return stages[a] < stages[b] })
	if n <= limit {
		for _, st := range stages {
			l.workers = append(l.workers, l.members[st]...)
		}
		return l
	}
	l.stages = stages
	if len(stages) > limit {
		l.stages = stages[:max(limit-1, 1)]
		l.more = len(stages) - len(l.stages)
	}
	return l
}

// TimelineRows returns how many rows a timeline of dep has (the "N more" row included).
func TimelineRows(dep *dataplane.Deployment) int {
	return layoutTimeline(dep, MaxTimelineRows).rows()
}

// seriesName names the colour of a batch's (app, pipeline): the app alone when it has one
// pipeline (or none), else "app p<N>".
// appColorIndex is the palette index an app's (pipeline's) requests are drawn in: the
// timeline's bars and, through AppColors, the LLM report's CDFs, so one class is one colour
// in every figure.
func appColorIndex(app dataplane.AppID, pipeline int) int {
	return (max(pipeline, 0) + int(app)*3) % len(palette)
}

// AppColors maps each app of dep (an LLM deployment's classes) to the colour the timeline
// draws its requests in.
func AppColors(dep *dataplane.Deployment) map[string]color.Color {
	out := map[string]color.Color{}
	if dep == nil {
		return out
	}
	for i, a := range dep.Apps {
		out[a.Name] = palette[appColorIndex(dataplane.AppID(i), 0)]
	}
	return out
}

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
// batch's pipeline; NIC transfers are drawn as thin grey bars on the sender's row. Past
// MaxTimelineRows workers, a row is a stage and its batches are packed into as many lanes
// as ran at once. A legend names each colour (SavePlot draws it outside the bars).
func TimelinePlot(title string, e *dataplane.Engine, from, to dataplane.Time) (*plot.Plot, error) {
	return timelinePlot(title, e, from, to, MaxTimelineRows)
}

// hopSpan is one hop to draw: compute [s, e) and its NIC transfer [os, oe) (os < 0: none).
type hopSpan struct {
	s, e, os, oe float64
	c            color.Color
}

func timelinePlot(title string, e *dataplane.Engine, from, to dataplane.Time, limit int) (*plot.Plot, error) {
	dep := e.Deployment()
	lay := layoutTimeline(dep, limit)
	rows := lay.rows()
	row := map[dataplane.WorkerID]int{}
	ticks := make([]plot.Tick, 0, rows)
	for r, w := range lay.workers {
		row[dataplane.WorkerID(w)] = r
		wk := dep.Topo.Workers[w]
		ticks = append(ticks, plot.Tick{Value: float64(r), Label: fmt.Sprintf("%s %s", dep.Stages[wk.Stage].Name, wk.Name)})
	}
	for r, st := range lay.stages {
		for _, w := range lay.members[st] {
			row[dataplane.WorkerID(w)] = r
		}
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
	spans := make([][]hopSpan, rows)
	for _, b := range e.Batches() {
		for _, h := range b.Hops {
			r, ok := row[h.Worker]
			if !ok || h.Start < 0 || h.End <= from || h.Start >= to {
				continue
			}
			st := dep.Stages[h.Stage]
			// The batch's app, not the stage's: a shared stage (QLM's LLM instances)
			// serves several apps, and a batch holds one app's requests.
			ci := appColorIndex(b.App, st.Pipeline)
			sp := hopSpan{s: ms(max(h.Start, from)), e: ms(min(h.End, to)), os: -1, c: palette[ci]}
			nm := seriesName(dep, b.App, st.Pipeline, multi)
			if _, ok := names[ci]; !ok {
				used = append(used, ci)
			}
			if !contains(names[ci], nm) {
				names[ci] = append(names[ci], nm)
			}
			if h.OutStart >= 0 && h.OutEnd > from && h.OutStart < to {
				sp.os, sp.oe = ms(max(h.OutStart, from)), ms(min(h.OutEnd, to))
				transfers = true
			}
			spans[r] = append(spans[r], sp)
		}
	}
	for r, ss := range spans {
		lanes := 1
		lane := make([]int, len(ss))
		if r < len(lay.stages) {
			lane, lanes = packLanes(ss)
		}
		for i, sp := range ss {
			g.bars = append(g.bars, bar{row: r, lane: lane[i], lanes: lanes, s: sp.s, e: sp.e, c: sp.c})
			if sp.os >= 0 {
				g.bars = append(g.bars, bar{row: r, lane: lane[i], lanes: lanes, s: sp.os, e: sp.oe, c: grey})
			}
		}
		if r < len(lay.stages) {
			st := lay.stages[r]
			busy := fmt.Sprintf("≤%d busy at once", lanes)
			if len(ss) == 0 {
				busy = "idle in this window"
			}
			ticks = append(ticks, plot.Tick{Value: float64(r), Label: fmt.Sprintf("%s (%s, %s)", dep.Stages[st].Name, plural(len(lay.members[st]), "worker"), busy)})
		}
	}
	if lay.more > 0 {
		what := "workers"
		if len(lay.stages) > 0 {
			what = "stages"
		}
		ticks = append(ticks, plot.Tick{Value: float64(rows - 1), Label: fmt.Sprintf("… %d more %s not shown", lay.more, what)})
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (" + unit + ")"
	if len(lay.stages) > 0 {
		p.Y.Label.Text = "stage (batches packed into lanes)"
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Tick.Label.Font.Size = vg.Points(7)
	p.X.Min, p.X.Max = ms(from), ms(to)
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

// packLanes assigns each span (compute and its transfer together) the lowest lane free
// at its start (first fit in start order), and returns the lanes and how many were used.
func packLanes(ss []hopSpan) ([]int, int) {
	order := make([]int, len(ss))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ss[order[a]].s < ss[order[b]].s })
	lane := make([]int, len(ss))
	var free []float64 // lane → when it frees
	for _, i := range order {
		end := ss[i].e
		if ss[i].os >= 0 {
			end = max(end, ss[i].oe)
		}
		k := 0
		for k < len(free) && free[k] > ss[i].s {
			k++
		}
		if k == len(free) {
			free = append(free, 0)
		}
		free[k], lane[i] = end, k
	}
	return lane, max(len(free), 1)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
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
// 10.0–10.2 s slice of one. fallback is the run's length: with no
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
	lat := make([]float64, len(spans))
	var end dataplane.Time
	for i, s := range spans {
		lat[i] = float64(s.done - s.arrival)
		end = max(end, s.done)
	}
	w := max(MinTimelineWindow, dataplane.Time(3*quantile.Median(lat)))
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
