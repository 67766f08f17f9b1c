package explain

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
)

// The three knobs the explanation turns, each a copy of the inputs with one thing changed,
// so that a relaxation it states is one a user can make in the files (or with --slo) and
// solve again: every SLO times a factor, every stated rate times a factor, and GPUs of one
// type added to the cluster.

// sloKeys are the workload fields, in every system's sections, that hold a latency objective
// as a duration: PPipe's, PARD's, DyOrc's and an LLM class's end-to-end slo, an LLM class's
// ttft_slo and tpot_slo, and (under latency_slo) a cascade's latency. A field is found by its
// name in the workload's JSON, so a sixth system whose sections name their SLOs so is
// relaxed too; one that names them otherwise has no SLO knob (the explanation says so).
var sloKeys = map[string]bool{"slo": true, "ttft_slo": true, "tpot_slo": true}

// sloScaleKeys hold an SLO as a multiple of a latency the planner derives (PPipe's
// slo_scale, the SLO of a model without one as a multiple of its fastest batch-1 latency).
var sloScaleKeys = map[string]bool{"slo_scale": true}

// SLOTarget is one SLO the knob scales: where it is and its value as given.
type SLOTarget struct {
	// Path is the field's place in the workload ("llm_classes[0].ttft_slo"), or "--slo".
	Path string `json:"path"`
	// Name is the application it belongs to ("" where the object names none).
	Name string `json:"name,omitempty"`
	// Value is the SLO as given ("500ms", or "×5" for a slo_scale).
	Value string `json:"value"`
	// Relaxed is the SLO at the stated factor (set by the explanation).
	Relaxed string `json:"relaxed,omitempty"`

	dur   time.Duration
	scale float64
}

// relaxed is the target at k times its value, as the workload would spell it.
func (t SLOTarget) relaxed(k float64) string {
	if t.dur > 0 {
		return scaleDuration(t.dur, k).String()
	}
	return "×" + strconv.FormatFloat(t.scale*k, 'g', 4, 64)
}

// scaleDuration is d×k rounded to the microsecond (a workload spells no finer SLO).
func scaleDuration(d time.Duration, k float64) time.Duration {
	return time.Duration(math.Round(float64(d)*k/1e3)) * time.Microsecond
}

// SLOTargets lists the SLOs the knob scales in in and s: --slo when given (it overrides the
// workload's), then every SLO field of the workload.
func SLOTargets(in planner.Inputs, s planner.Settings) ([]SLOTarget, error) {
	var out []SLOTarget
	if s.SLO > 0 {
		out = append(out, SLOTarget{Path: "--slo", Value: s.SLO.String(), dur: s.SLO})
	}
	if in.Workload == nil {
		return out, nil
	}
	tree, err := workloadTree(in.Workload)
	if err != nil {
		return nil, err
	}
	walkSLOs(tree, "", "", func(path, name, key string, v any) any {
		switch x := v.(type) {
		case string:
			if d, err := time.ParseDuration(x); err == nil && d > 0 {
				out = append(out, SLOTarget{Path: path, Name: name, Value: d.String(), dur: d})
			}
		case float64:
			if x > 0 {
				out = append(out, SLOTarget{Path: path, Name: name, Value: "×" + strconv.FormatFloat(x, 'g', 4, 64), scale: x})
			}
		}
		return v
	})
	return out, nil
}

// ScaleSLOs is in and s with every SLO (SLOTargets) times k: a workload decoded afresh
// from its JSON with the fields changed (so it is validated as a file would be), and --slo
// times k where given.
func ScaleSLOs(in planner.Inputs, s planner.Settings, secs *formats.SectionSet, k float64) (planner.Inputs, planner.Settings, error) {
	return scaleSLOsWhere(in, s, secs, k, func(string) bool { return true })
}

// ScaleSLO is in and s with the one SLO at path (a SLOTarget's Path) times k, every other
// as given.
func ScaleSLO(in planner.Inputs, s planner.Settings, secs *formats.SectionSet, path string, k float64) (planner.Inputs, planner.Settings, error) {
	return scaleSLOsWhere(in, s, secs, k, func(p string) bool { return p == path })
}

// scaleSLOsWhere is ScaleSLOs over the SLOs whose path pick accepts.
func scaleSLOsWhere(in planner.Inputs, s planner.Settings, secs *formats.SectionSet, k float64, pick func(path string) bool) (planner.Inputs, planner.Settings, error) {
	if s.SLO > 0 && pick("--slo") {
		s.SLO = scaleDuration(s.SLO, k)
	}
	if in.Workload == nil {
		return in, s, nil
	}
	tree, err := workloadTree(in.Workload)
	if err != nil {
		return in, s, err
	}
	walkSLOs(tree, "", "", func(path, name, key string, v any) any {
		if !pick(path) {
			return v
		}
		switch x := v.(type) {
		case string:
			if d, err := time.ParseDuration(x); err == nil && d > 0 {
				return scaleDuration(d, k).String()
			}
		case float64:
			if x > 0 {
				return x * k
			}
		}
		return v
	})
	data, err := json.Marshal(tree)
	if err != nil {
		return in, s, err
	}
	w, err := formats.DecodeInto[*formats.Workload](fmt.Sprintf("workload (SLOs ×%g)", k), data, secs)
	if err != nil {
		return in, s, err
	}
	in.Workload = w
	return in, s, nil
}

// workloadTree is w's JSON as a generic tree.
func workloadTree(w *formats.Workload) (any, error) {
	data, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	var tree any
	return tree, json.Unmarshal(data, &tree)
}

// walkSLOs visits every SLO field of the tree in a fixed order (object keys sorted) and
// replaces its value by visit's answer. name is the nearest enclosing object's "name".
func walkSLOs(node any, path, name string, visit func(path, name, key string, v any) any) {
	switch x := node.(type) {
	case map[string]any:
		if n, ok := x["name"].(string); ok {
			name = n
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			switch {
			case sloKeys[k] || sloScaleKeys[k]:
				x[k] = visit(p, name, k, x[k])
			case k == "latency_slo":
				if m, ok := x[k].(map[string]any); ok {
					if _, ok := m["latency"]; ok {
						m["latency"] = visit(p+".latency", name, "latency", m["latency"])
					}
				}
			default:
				walkSLOs(x[k], p, name, visit)
			}
		}
	case []any:
		for i, v := range x {
			walkSLOs(v, fmt.Sprintf("%s[%d]", path, i), name, visit)
		}
	}
}

// RateTarget is one application's stated rate and its rate at the stated factor.
type RateTarget struct {
	Name    string  `json:"name"`
	RateRPS float64 `json:"rate_rps"`
	Relaxed float64 `json:"relaxed_rps,omitempty"`
}

// RateTargets are the workload's applications with a stated rate (formats.RateTargeter).
func RateTargets(in planner.Inputs) []RateTarget {
	var out []RateTarget
	for _, t := range in.Workload.RateTargets() {
		if t.RateRPS > 0 {
			out = append(out, RateTarget{Name: t.Name, RateRPS: t.RateRPS})
		}
	}
	return out
}

// ScaleRates is in with every stated rate times k.
func ScaleRates(in planner.Inputs, k float64) planner.Inputs {
	in.Workload = in.Workload.WithRates(func(_ string, rps float64) float64 { return rps * k })
	return in
}

// GPUOption is one GPU type the knob adds to: which field grows and by at most how many.
type GPUOption struct {
	Type string `json:"type"`
	// Field is the cluster field that grows: count (the GPUs a throughput plan uses) or,
	// with --objective cost, available (the most a least-cost fleet may use).
	Field string `json:"field"`
	// Have is the field's value as given; Max the most GPUs the search adds.
	Have int `json:"have"`
	Max  int `json:"max_add"`
	// Bounded says Max is what the cluster's available allows (else the search's own
	// bound, unboundedAdd, where available is not stated).
	Bounded bool `json:"bounded_by_available"`
}

// unboundedAdd is the most GPUs of a type the search adds where the cluster states no
// available: 8× what it has, at least 64.
func unboundedAdd(have int) int { return max(64, 8*have) }

// GPUOptions are the cluster's GPU types the knob can add to under objective. A cluster
// that lists its servers has none (an added GPU would need a server to sit in); a type whose
// available leaves nothing to add, or (cost) states none, so is already unbounded, is left
// out with the reason in skipped.
func GPUOptions(c *formats.Cluster, objective string) (opts []GPUOption, skipped []string) {
	if c == nil {
		return nil, nil
	}
	if len(c.Servers) > 0 {
		return nil, []string{"the cluster lists its servers: name the servers of any GPUs added"}
	}
	for _, g := range c.GPUs {
		o := GPUOption{Type: g.Type, Field: "count", Have: g.Count}
		if objective == planner.ObjectiveCost {
			if g.Available == nil {
				skipped = append(skipped, fmt.Sprintf("%s: available is not stated, so a least-cost fleet may already use any number", g.Type))
				continue
			}
			o.Field, o.Have, o.Max = "available", *g.Available, unboundedAdd(*g.Available)
		} else if g.Available != nil {
			o.Max, o.Bounded = *g.Available-g.Count, true
			if o.Max <= 0 {
				skipped = append(skipped, fmt.Sprintf("%s: all %d available are in the cluster already", g.Type, *g.Available))
				continue
			}
		} else {
			o.Max = unboundedAdd(g.Count)
		}
		opts = append(opts, o)
	}
	return opts, skipped
}

// AddGPUs is in with n GPUs added to o's field of its type (a fresh cluster; the input's is
// unchanged).
func AddGPUs(in planner.Inputs, o GPUOption, n int) planner.Inputs {
	c := *in.Cluster
	c.GPUs = slices.Clone(c.GPUs)
	for i := range c.GPUs {
		g := &c.GPUs[i]
		if g.Type != o.Type {
			continue
		}
		switch o.Field {
		case "available":
			a := *g.Available + n
			g.Available = &a
		default:
			g.Count += n
			if g.Available != nil && *g.Available < g.Count {
				a := g.Count
				g.Available = &a
			}
		}
	}
	in.Cluster = &c
	return in
}

// who names the target as the text does: its application and field ("chat ttft_slo"), or
// its path where no application is named.
func (t SLOTarget) who() string {
	if t.Name == "" {
		return t.Path
	}
	return t.Name + " " + t.Path[strings.LastIndex(t.Path, ".")+1:]
}

// describeSLOs is "model demo slo 1ms → 4.73ms, ..." for the targets at factor k.
func describeSLOs(ts []SLOTarget) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("%s %s → %s", t.who(), t.Value, t.Relaxed)
	}
	return strings.Join(parts, ", ")
}
