package llmdeploy

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/plan-dev/plan/planner"
	pllm "github.com/plan-dev/plan/profiler/llm"
)

// Tables are the search's report: every candidate (mode, GPU type, TP, engine settings, the
// capacity one unit holds, the replicas its model's rate needs with it alone, the predicted
// p50/p99 TTFT and TPOT at that capacity — the worst of its model's classes —, output
// tokens/s per GPU, $/h of those replicas, $ per million output tokens, and the units the
// chosen fleet runs), then the chosen fleet beside the comparison fleets, then the engine
// flags of the chosen fleet's instances.
func (res *Result) Tables() []planner.Table {
	ct := planner.Table{Header: []string{"MODEL", "MODE", "GPU", "TP", "BATCHED TOKENS", "MAX SEQS", "PROFILE", "REQ/S", "REPLICAS",
		"TTFT P50", "TTFT P99", "TPOT P50", "TPOT P99", "TPOT ERR", "TOK/S/GPU", "$/H", "$/M TOK", "CHOSEN"}}
	for i, r := range res.Rows {
		c := r.Candidate
		// A disaggregated candidate's roles side by side, prefill/decode.
		join := func(f func(Role) string) string {
			var v []string
			for _, x := range c.Roles {
				v = append(v, f(x))
			}
			return strings.Join(uniq(v), "/")
		}
		mode := string(c.Mode)
		if c.Mode == Disaggregated {
			mode = fmt.Sprintf("disaggregated %d:%d", c.Ratio[0], c.Ratio[1])
		}
		row := []string{c.Model, mode, join(func(x Role) string { return x.GPU }), join(func(x Role) string { return fmt.Sprint(x.TP) + x.Engine.variant() }),
			join(func(x Role) string { return fmt.Sprint(x.Engine.MaxBatchedTokens) }), join(func(x Role) string { return fmt.Sprint(x.Engine.MaxSeqs) }),
			join(func(x Role) string {
				switch {
				case x.Estimated && strings.Contains(x.Profile.StepTimes, pllm.SetAsideLabel):
					// Its MoE layers read around a kernel table set aside as suspect:
					// the profile's step_times says which, and how it is estimated.
					return "estimated, table set aside"
				case x.Estimated:
					return "estimated"
				}
				return "given"
			})}
		if r.Eval.Rate <= 0 {
			row = append(row, "0", "-", "-", "-", "-", "-", "-", "-", "-", "-", "")
		} else {
			w := worst(r.Eval.Classes)
			gpus := 0
			for _, n := range c.GPUs() {
				gpus += n
			}
			row = append(row, fmt.Sprintf("%.3g", r.Eval.Rate), fmt.Sprint(r.Replicas), ms(w.TTFT.P50), ms(w.TTFT.P99), ms(w.TPOT.P50), ms(w.TPOT.P99), c.ExpectedError().ITL.String(),
				fmt.Sprintf("%.0f", r.Eval.OutTokensPerS/float64(max(gpus, 1))), fmt.Sprintf("%.2f", r.CostPerHour), fmt.Sprintf("%.3f", r.PerMTokens), "")
		}
		if n := res.Chosen.Units[i]; n > 0 {
			row[len(row)-1] = fmt.Sprintf("%d×", n)
		}
		ct.Rows = append(ct.Rows, row)
	}
	ft := planner.Table{Header: []string{"FLEET", "$/H", "VS SEARCH", "INSTANCES"}}
	for _, f := range append([]Fleet{res.Chosen}, res.Compare...) {
		if f.Err != nil {
			ft.Rows = append(ft.Rows, []string{f.Name, "-", "-", "none: " + short(f.Err.Error())})
			continue
		}
		vs := "-"
		if f.Name != res.Chosen.Name && res.Chosen.Cost > 0 {
			vs = fmt.Sprintf("%+.1f%%", 100*(f.Cost-res.Chosen.Cost)/res.Chosen.Cost)
		}
		ft.Rows = append(ft.Rows, []string{f.Name, fmt.Sprintf("%.2f", f.Cost), vs, res.describe(f)})
	}
	et := planner.Table{Header: []string{"MODEL", "ROLE", "GPU", "INSTANCES", "ENGINE FLAGS"}}
	for _, i := range res.Chosen.Chosen() {
		r := res.Rows[i]
		for k, x := range r.Candidate.Roles {
			role := x.Role
			if role == RoleBoth {
				role = "aggregated"
			}
			et.Rows = append(et.Rows, []string{r.Candidate.Model, role, x.GPU, fmt.Sprint(res.Chosen.Units[i] * r.Candidate.instances(k)), x.flags()})
		}
	}
	return append([]planner.Table{ct, ft, et}, planner.NoteTable(res.Notes)...)
}

// uniq drops repeats of the first value (one value when every role has it).
func uniq(v []string) []string {
	for _, x := range v[1:] {
		if x != v[0] {
			return v
		}
	}
	return v[:1]
}

// describe names a fleet's units: "1 × llama-3.1-8b@H100×1 b2048 s256 + ...".
func (res *Result) describe(f Fleet) string {
	var parts []string
	used := map[string]int{}
	for _, i := range f.Chosen() {
		parts = append(parts, fmt.Sprintf("%d × %s", f.Units[i], res.Rows[i].Candidate.Label()))
		for g, n := range res.Rows[i].Candidate.GPUs() {
			used[g] += f.Units[i] * n
		}
	}
	out := strings.Join(parts, " + ")
	var past []string
	for _, g := range slices.Sorted(maps.Keys(used)) {
		if c := res.Counts[g]; c > 0 && used[g] > c {
			past = append(past, fmt.Sprintf("%d %s, the cluster has %d", used[g], g, c))
		}
	}
	if len(past) > 0 {
		// A cost fleet is bounded by `available`, which the cluster leaves unset here.
		out += " (" + strings.Join(past, "; ") + ": no available set, so the cost fleet buys more)"
	}
	return out
}

// worst is the highest of each percentile over the classes.
func worst(ps []ClassPrediction) ClassPrediction {
	var w ClassPrediction
	for _, p := range ps {
		w.TTFT.P50, w.TTFT.P99 = math.Max(w.TTFT.P50, p.TTFT.P50), math.Max(w.TTFT.P99, p.TTFT.P99)
		w.TPOT.P50, w.TPOT.P99 = math.Max(w.TPOT.P50, p.TPOT.P50), math.Max(w.TPOT.P99, p.TPOT.P99)
	}
	return w
}

func ms(us float64) string {
	if us >= 1e4 {
		return fmt.Sprintf("%.0f ms", us/1e3)
	}
	return fmt.Sprintf("%.1f ms", us/1e3)
}

// short cuts an error to its first line and 120 bytes.
func short(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// ExpectedError is the candidate's expected-error bands: its decode role's profile (the
// last role; the only one when colocated) in its regime, from the validation set's
// leave-one-run-out errors (profiler/llm BandsFor). The TPOT column shows the ITL band.
func (c Candidate) ExpectedError() pllm.Bands {
	if len(c.Roles) == 0 || c.Roles[len(c.Roles)-1].Profile == nil {
		return pllm.Bands{}
	}
	return pllm.BandsFor(pllm.RegimeOf(c.Roles[len(c.Roles)-1].Profile), pllm.ValidationRuns())
}
