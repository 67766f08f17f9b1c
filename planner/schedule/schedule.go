package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// Kind is the schedule document's kind.
const Kind = "Schedule"

// Schedule is `plan solve --trace --window`'s output: one least-cost plan per window and the
// day's cost against one plan provisioned for the day's peak.
type Schedule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Trace is the rate trace's file; Targets its columns (the order of every peak_rps).
	Trace   string   `json:"trace"`
	Targets []string `json:"targets"`
	// TraceDigest is "sha256:HEX" of the trace's bytes (decompressed where the file is .gz
	// or .zst, so a compressed copy is the same trace): a schedule's plans are sized for
	// those rates, so replaying it on another trace is refused (TraceDigestOf). Schedules
	// written before it have none.
	TraceDigest string `json:"trace_digest,omitempty"`
	// WindowS is the window length; Quantile, Margin and BucketS define each window's peak
	// (Peaks).
	WindowS  float64 `json:"window_s"`
	Quantile float64 `json:"quantile"`
	Margin   float64 `json:"margin"`
	BucketS  float64 `json:"bucket_s"`
	Currency string  `json:"currency,omitempty"`
	Windows  []Entry `json:"windows"`
	// Peak is the plan for the day's peak (the highest window peak of every target), kept
	// all day: the baseline the schedule saves against.
	Peak Entry `json:"peak"`
	// TotalCost is Σ windows' cost; PeakCost the peak plan's cost per hour × the span;
	// Saving = 1 − TotalCost/PeakCost.
	TotalCost float64 `json:"total_cost"`
	PeakCost  float64 `json:"peak_cost"`
	Saving    float64 `json:"saving"`
}

// Entry is one window's plan (or the peak plan, over the whole trace).
type Entry struct {
	StartS      float64            `json:"start_s"`
	EndS        float64            `json:"end_s"`
	PeakRPS     []float64          `json:"peak_rps"`
	GPUsUsed    []formats.FleetGPU `json:"gpus_used"`
	CostPerHour float64            `json:"cost_per_hour"`
	Cost        float64            `json:"cost"`
	Plan        json.RawMessage    `json:"plan"`
	// Kept: the plan is the previous window's, kept because it serves this window's peak
	// at no higher cost; PlannedFor is the peak it was solved for.
	Kept       bool      `json:"kept,omitempty"`
	PlannedFor []float64 `json:"planned_for,omitempty"`
}

// MinShare is the least share of its day's peak a target is planned for in any window.
const MinShare = 0.01

// SolveFunc plans a workload at the least cost (the system's planner with --objective cost).
type SolveFunc func(ctx context.Context, w *formats.Workload) (*formats.Plan, error)

// Build plans every window and the peak: windows with the same peak share one solve (a flat
// night costs one MILP, not eight).
func Build(ctx context.Context, r *Rates, w *formats.Workload, window float64, p Peaks, solve SolveFunc) (*Schedule, error) {
	if err := CheckTargets(r, w); err != nil {
		return nil, err
	}
	wins, err := r.Windows(window, p)
	if err != nil {
		return nil, err
	}
	s := &Schedule{APIVersion: "plan/v1", Kind: Kind, Trace: r.Name, Targets: r.Targets, WindowS: window,
		Quantile: p.Quantile, Margin: p.Margin, BucketS: r.BucketS(p)}
	cache := map[string]Entry{}
	entry := func(peak []float64, from, to float64) (Entry, error) {
		key := fmt.Sprint(peak)
		e, ok := cache[key]
		if !ok {
			wl, err := WithRates(w, r.Targets, peak)
			if err != nil {
				return e, err
			}
			plan, err := solve(ctx, wl)
			if err != nil {
				return e, fmt.Errorf("window %s–%s (peak %s): %w", fmtSec(from), fmtSec(to), describe(r.Targets, peak), err)
			}
			if plan.Fleet == nil {
				return e, fmt.Errorf("the plan has no fleet: the system's planner has no cost objective")
			}
			raw, err := formats.Marshal(plan)
			if err != nil {
				return e, err
			}
			e = Entry{PeakRPS: peak, GPUsUsed: plan.Fleet.GPUsUsed, CostPerHour: plan.Fleet.CostPerHour, Plan: bytes.TrimSpace(raw)}
			if s.Currency == "" {
				s.Currency = plan.Fleet.Currency
			}
			cache[key] = e
		}
		e.StartS, e.EndS = from, to
		e.Cost = round6(e.CostPerHour * (to - from) / 3600)
		return e, nil
	}
	peak := make([]float64, len(r.Targets))
	for _, win := range wins {
		for i, v := range win.Peak {
			peak[i] = math.Max(peak[i], v)
		}
	}
	for i, v := range peak {
		if v <= 0 {
			return nil, fmt.Errorf("%s: column %s: no requests in the whole trace: nothing to plan for it (drop it from the workload)", r.Name, r.Targets[i])
		}
	}
	for _, win := range wins {
		// A target quiet for a whole window keeps a minimal deployment (planned at MinShare of
		// its day's peak): its stray requests have somewhere to go, and a planner needs a rate.
		for i, v := range win.Peak {
			win.Peak[i] = math.Max(v, round6(peak[i]*MinShare))
		}
		e, err := entry(win.Peak, win.Start, win.End)
		if err != nil {
			return nil, err
		}
		if n := len(s.Windows); n > 0 && keep(s.Windows[n-1], e) {
			// The previous window's plan serves this peak at no higher cost: keeping it
			// saves a switch (its overlap and the empty queues of a fresh plan).
			k := s.Windows[n-1]
			if !k.Kept {
				k.PlannedFor = k.PeakRPS
			}
			k.StartS, k.EndS, k.PeakRPS, k.Kept = e.StartS, e.EndS, e.PeakRPS, true
			k.Cost = round6(k.CostPerHour * (k.EndS - k.StartS) / 3600)
			e = k
		}
		s.Windows = append(s.Windows, e)
		s.TotalCost += e.Cost
	}
	if s.Peak, err = entry(peak, r.Start, r.Start+r.Span()); err != nil {
		return nil, err
	}
	s.TotalCost = round6(s.TotalCost)
	s.PeakCost = s.Peak.Cost
	if s.PeakCost > 0 {
		s.Saving = round6(1 - s.TotalCost/s.PeakCost)
	}
	return s, nil
}

// keep says whether prev's plan may serve next's window: it was planned for a peak at least
// next's in every target and costs no more per hour.
func keep(prev, next Entry) bool {
	if prev.CostPerHour > next.CostPerHour {
		return false
	}
	for i, v := range next.PeakRPS {
		if prev.PlannedRPS(i) < v {
			return false
		}
	}
	return true
}

// PlannedRPS is the rate of target i the entry's plan was solved for: its own peak, or the
// peak of the window whose plan it keeps.
func (e Entry) PlannedRPS(i int) float64 {
	if e.Kept {
		return e.PlannedFor[i]
	}
	return e.PeakRPS[i]
}

// CheckTargets says which applications of the workload that carry a rate (their sections
// say which: formats.RateTargeter — models, pipelines, cascades, LLM classes, workflow apps)
// the trace has no column for, and which columns name none of them.
func CheckTargets(r *Rates, w *formats.Workload) error {
	names := targets(w)
	if len(names) == 0 {
		return fmt.Errorf("workload: no application with a rate in its sections (%s): --trace plans those per window", strings.Join(sectionsOf(w), ", "))
	}
	var probs []string
	for _, n := range names {
		if r.Column(n) < 0 {
			probs = append(probs, fmt.Sprintf("%s: no column for %q of the workload (header: time_s,%s)", r.Name, n, strings.Join(r.Targets, ",")))
		}
	}
	for _, t := range r.Targets {
		if !slices.Contains(names, t) {
			probs = append(probs, fmt.Sprintf("%s: column %q: the workload has no application of that name with a rate", r.Name, t))
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%s", strings.Join(probs, "; "))
	}
	return nil
}

// targets names the workload's applications that carry a rate, section by section.
func targets(w *formats.Workload) []string {
	var n []string
	for _, t := range w.RateTargets() {
		n = append(n, t.Name)
	}
	return n
}

// sectionsOf names w's sections, for messages ("none" when it has none).
func sectionsOf(w *formats.Workload) []string {
	if keys := w.SectionKeys(); len(keys) > 0 {
		return keys
	}
	return []string{"none"}
}

// WithRates is a copy of w with the rate of each named target set (the rest of w shared):
// each application's section sets it (formats.RateTargeter), so every application a trace
// column may name (targets) can be set.
func WithRates(w *formats.Workload, names []string, rates []float64) (*formats.Workload, error) {
	want := make(map[string]float64, len(names))
	for i, n := range names {
		want[n] = rates[i]
	}
	set := map[string]bool{}
	c := w.WithRates(func(name string, rps float64) float64 {
		if r, ok := want[name]; ok {
			set[name] = true
			return r
		}
		return rps
	})
	for _, n := range names {
		if !set[n] {
			return nil, fmt.Errorf("workload: no application %q with a rate (applications: %s)", n, strings.Join(targets(w), ", "))
		}
	}
	return c, nil
}

func describe(names []string, rates []float64) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + strconv.FormatFloat(rates[i], 'g', 6, 64) + "rps"
	}
	return strings.Join(parts, " ")
}

// Marshal renders the schedule (formats.Marshal: indented, sorted keys, byte-identical for
// equal schedules).
func (s *Schedule) Marshal() ([]byte, error) { return formats.Marshal(s) }

// Read reads a schedule file strictly (unknown fields are errors naming the file).
func Read(path string) (*Schedule, error) {
	data, err := formats.ReadText(path, formats.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	return Decode(path, data)
}

// Decode decodes a schedule document.
func Decode(name string, data []byte) (*Schedule, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Schedule
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if s.Kind != Kind {
		return nil, fmt.Errorf("%s: kind %q: want %s", name, s.Kind, Kind)
	}
	if len(s.Windows) == 0 {
		return nil, fmt.Errorf("%s: windows: empty", name)
	}
	for i, e := range s.Windows {
		if len(e.PeakRPS) != len(s.Targets) || len(e.Plan) == 0 || !(e.EndS > e.StartS) || e.Kept && len(e.PlannedFor) != len(s.Targets) {
			return nil, fmt.Errorf("%s: windows[%d]: want start_s < end_s, a plan and one peak_rps (and planned_for when kept) per target", name, i)
		}
	}
	return &s, nil
}

// IsSchedule says whether data is a schedule document (its kind), so `plan simulate` can take
// a plan or a schedule as its argument.
func IsSchedule(data []byte) bool {
	var head struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(data, &head) == nil && head.Kind == Kind
}
