package autopilot

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/plan-dev/plan/dataplane"
	ap "github.com/plan-dev/plan/dataplane/autopilot"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/sim"
)

// PlanRef names a plan the loop served or chose.
type PlanRef struct {
	Digest string `json:"digest"`
	GPUs   int    `json:"gpus"`
	// CapacityRPS is each application's rate the plan serves within its SLO (the solver's
	// figure; absent when the plan was never handed back by the ladder).
	CapacityRPS []float64 `json:"capacity_rps,omitempty"`
}

// Predicted is what the loop expected of a chosen plan when it chose it: the
// GPUs it adds (negative: frees) and each application's forecast over its capacity.
type Predicted struct {
	GPUDelta    int       `json:"gpu_delta"`
	Utilization []float64 `json:"utilization,omitempty"`
	// ServesForecast: every application's forecast is within the plan's capacity.
	ServesForecast *bool `json:"serves_forecast,omitempty"`
}

// Observed is what the chosen plan then did in the simulation: its segment.
type Observed struct {
	FromS      float64 `json:"from_s"`
	ToS        float64 `json:"to_s"`
	Requests   int64   `json:"requests"`
	Attainment float64 `json:"attainment"`
}

// DecisionReport is one decision of the loop, as --report writes it.
type DecisionReport struct {
	TimeS  float64 `json:"time_s"`
	Action string  `json:"action"`
	// Trigger is why the loop looked again (the re-solve's cause: the load left the plan's
	// band, an interval elapsed); Why is what it concluded.
	Trigger     string     `json:"trigger"`
	Why         string     `json:"why"`
	ForecastRPS []float64  `json:"forecast_rps,omitempty"`
	From        *PlanRef   `json:"from,omitempty"`
	Chosen      *PlanRef   `json:"chosen,omitempty"`
	Predicted   *Predicted `json:"predicted,omitempty"`
	Observed    *Observed  `json:"observed,omitempty"`
}

// ReportDoc is DIR/autopilot-report.json.
type ReportDoc struct {
	Trace     string           `json:"trace"`
	DurationS float64          `json:"duration_s"`
	WindowS   float64          `json:"window_s"`
	Start     PlanRef          `json:"start_plan"`
	Decisions []DecisionReport `json:"decisions"`
	// Truncated: the loop keeps its last 64 decisions; earlier ones are not in this file.
	Truncated bool        `json:"decisions_truncated,omitempty"`
	Summary   *SimReport  `json:"summary"`
	Rate      []RatePoint `json:"trace_rate"`
}

// RatePoint is the trace's total rate over one window.
type RatePoint struct {
	StartS float64 `json:"start_s"`
	RPS    float64 `json:"rps"`
}

// writeReport writes, when dir is set, DIR/autopilot-report.json and the
// GPUs-over-time plot DIR/autopilot.{png,svg}, and says so.
func writeReport(io *run.IO, dir string, rep *SimReport, arun *sim.AutopilotRun, ladder *recordingLadder, start ap.Candidate, window dataplane.Time) error {
	if dir == "" {
		return nil
	}
	files, err := reportFiles(dir, rep, arun, ladder, start, window)
	if err != nil {
		return err
	}
	io.Infof("wrote %s", strings.Join(files, ", "))
	return nil
}

// reportFiles writes the report's files and returns their paths.
func reportFiles(dir string, rep *SimReport, arun *sim.AutopilotRun, ladder *recordingLadder, start ap.Candidate, window dataplane.Time) ([]string, error) {
	ref := func(digest string) *PlanRef {
		if digest == "" {
			return nil
		}
		r := &PlanRef{Digest: digest}
		if c, ok := ladder.lookup(digest); ok {
			r.GPUs, r.CapacityRPS = c.GPUs, c.Capacity
		}
		return r
	}
	doc := ReportDoc{Trace: rep.Trace, DurationS: rep.Duration, WindowS: float64(window) / 1e6,
		Start: PlanRef{Digest: start.Digest, GPUs: start.GPUs, CapacityRPS: start.Capacity}, Summary: rep}
	res := rep.Autopilot
	doc.Truncated = res.Switches > 0 && len(res.Decisions) >= 64
	trigger := ""
	for _, d := range res.Decisions {
		if d.Action == "resolve" {
			trigger = d.Why
		}
		dr := DecisionReport{TimeS: float64(d.At) / 1e6, Action: d.Action, Trigger: trigger, Why: d.Why,
			ForecastRPS: d.Forecast, From: ref(d.From), Chosen: ref(d.To)}
		if dr.Chosen != nil {
			if d.GPUs > 0 {
				dr.Chosen.GPUs = d.GPUs
			}
			pr := &Predicted{GPUDelta: dr.Chosen.GPUs}
			if dr.From != nil {
				pr.GPUDelta -= dr.From.GPUs
			}
			if caps := dr.Chosen.CapacityRPS; len(caps) == len(d.Forecast) && len(caps) > 0 {
				ok := true
				for i, f := range d.Forecast {
					if caps[i] <= 0 {
						// No capacity for an application: no utilization to state.
						ok, pr.Utilization = f <= 0 && ok, nil
						break
					}
					ok = ok && f <= caps[i]
					pr.Utilization = append(pr.Utilization, roundTo(f/caps[i], 4))
				}
				pr.ServesForecast = &ok
			}
			dr.Predicted = pr
			// The segment the chosen plan then served (it takes requests once loaded).
			for _, s := range res.Segments {
				if s.Digest == d.To && s.EndS > dr.TimeS {
					dr.Observed = &Observed{FromS: s.StartS, ToS: s.EndS, Requests: s.Requests, Attainment: s.Attainment}
					break
				}
			}
		}
		doc.Decisions = append(doc.Decisions, dr)
	}
	// The trace's rate per window, summed over applications.
	series := &sim.AutopilotSeries{Segments: res.Segments, RateW: float64(window) / 1e6}
	if window > 0 && arun.Duration > 0 {
		n := int((arun.Duration + window - 1) / window)
		counts := make([]int, n)
		for _, ts := range arun.Arrivals {
			for _, t := range ts {
				if i := int(t / window); i < n {
					counts[i]++
				}
			}
		}
		for i, c := range counts {
			w := min(window, arun.Duration-dataplane.Time(i)*window)
			p := RatePoint{StartS: float64(dataplane.Time(i)*window) / 1e6, RPS: roundTo(float64(c)/(float64(w)/1e6), 4)}
			doc.Rate = append(doc.Rate, p)
			series.RateT, series.Rate = append(series.RateT, p.StartS), append(series.Rate, p.RPS)
		}
	}
	for _, d := range doc.Decisions {
		if len(d.ForecastRPS) > 0 {
			series.ForecastT, series.Forecast = append(series.ForecastT, d.TimeS), append(series.Forecast, run.Sum(d.ForecastRPS))
		}
	}
	for _, s := range res.Segments {
		c := math.NaN()
		if r := ref(s.Digest); len(r.CapacityRPS) > 0 {
			c = run.Sum(r.CapacityRPS)
		}
		series.CapT, series.Cap = append(series.CapT, s.StartS), append(series.Cap, c)
	}
	series.RefGPUs = []sim.RefLine{{Name: "plan for the peak", Value: float64(rep.PeakGPUs)}, {Name: "static plan", Value: float64(start.GPUs)}}
	plots, err := sim.AutopilotPlots(fmt.Sprintf("autopilot over %s", rep.Trace), series)
	if err != nil {
		return nil, err
	}
	data, err := formats.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, run.UsageErrorf("--report %s: %v", dir, err)
	}
	jsonPath := filepath.Join(dir, "autopilot-report.json")
	paths, err := sim.SaveStacked(plots, dir, "autopilot", 18*vg.Centimeter, 14*vg.Centimeter)
	if err != nil {
		return nil, err
	}
	if err := formats.WriteAtomic(jsonPath, data); err != nil {
		return nil, err
	}
	return append([]string{jsonPath}, paths...), nil
}

func roundTo(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}
