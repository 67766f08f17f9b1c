package pardbench

import (
	"fmt"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
)

// ModuleTrace is the decision trace of one module over a run: where the
// drops happen, how much of the end-to-end budget requests had consumed when they reached
// the module and when they were dropped there, the queueing they met, and the GPU time the
// module spent on requests that were dropped or late later on (the "drop too late" waste
// of PARD §3.2, Observation #1).
type ModuleTrace struct {
	Module string `json:"module"`
	// Ran counts requests that ran at the module; Dropped those dropped there (a decided
	// drop; late completions are charged to the sink as Late).
	Ran     float64 `json:"ran"`
	Dropped float64 `json:"dropped"`
	Late    float64 `json:"late"`
	// BudgetIn is the mean share of the SLO consumed on arrival at the module, (t_r − t_s)/SLO,
	// of the requests that ran there; BudgetAtDrop the mean (t_drop − t_s)/SLO of those
	// dropped there.
	BudgetIn     float64 `json:"budget_in"`
	BudgetAtDrop float64 `json:"budget_at_drop"`
	// WaitMs is the mean queueing + batch wait (t_r to batch start) of the requests that ran.
	WaitMs float64 `json:"wait_ms"`
	// WastedGPUs is the GPU time (s) the module spent on requests that ended dropped or late.
	WastedGPUs float64 `json:"wasted_gpu_s"`
}

// decisionTrace computes the per-module trace of a finished run (stages in pipeline order).
func decisionTrace(e *dataplane.Engine, stages []dataplane.StageID, sink dataplane.StageID) []ModuleTrace {
	dep := e.Deployment()
	slo := float64(dep.Apps[0].SLO)
	idx := map[dataplane.StageID]int{}
	out := make([]ModuleTrace, len(stages))
	for i, s := range stages {
		idx[s] = i
		out[i].Module = dep.Stages[s].Name
	}
	budgetIn := make([]float64, len(stages))
	batches := e.Batches()
	reqs := e.Requests()
	for i := range reqs {
		r := &reqs[i]
		bad := r.Outcome == dataplane.Dropped || r.Outcome == dataplane.Late
		ready := map[dataplane.StageID]dataplane.Time{}
		for _, b := range e.RequestBatches(r.ID) {
			bt := &batches[b]
			h := &bt.Hops[0]
			k, ok := idx[h.Stage]
			if !ok || h.Start < 0 {
				continue
			}
			at := r.Arrival
			if t, ok := ready[h.Stage]; ok {
				at = t
			}
			mt := &out[k]
			mt.Ran++
			budgetIn[k] += float64(at-r.Arrival) / slo
			mt.WaitMs += float64(h.Start-at) / 1000
			if bad && h.End >= h.Start && len(bt.Reqs) > 0 {
				mt.WastedGPUs += float64(h.End-h.Start) / float64(len(bt.Reqs)) / 1e6
			}
			end := h.End
			if h.OutEnd >= 0 {
				end = h.OutEnd
			}
			for _, n := range dep.Stages[h.Stage].Next {
				ready[n] = max(ready[n], end)
			}
		}
		switch r.Outcome {
		case dataplane.Dropped:
			if k, ok := idx[r.DropStage]; ok {
				out[k].Dropped++
				out[k].BudgetAtDrop += float64(r.Done-r.Arrival) / slo
			}
		case dataplane.Late:
			out[idx[sink]].Late++
		}
	}
	for k := range out {
		mt := &out[k]
		if mt.Ran > 0 {
			mt.BudgetIn = round6(budgetIn[k] / mt.Ran)
			mt.WaitMs = round6(mt.WaitMs / mt.Ran)
		}
		if mt.Dropped > 0 {
			mt.BudgetAtDrop = round6(mt.BudgetAtDrop / mt.Dropped)
		}
		mt.WastedGPUs = round6(mt.WastedGPUs)
	}
	return out
}

// addTrace sums one seed's trace into the row (aggregate divides by the seeds).
func (row *BenchRow) addTrace(tr []ModuleTrace) {
	if row.Decisions == nil {
		row.Decisions = make([]ModuleTrace, len(tr))
		for k := range tr {
			row.Decisions[k].Module = tr[k].Module
		}
	}
	for k := range tr {
		a, b := &row.Decisions[k], &tr[k]
		a.Ran += b.Ran
		a.Dropped += b.Dropped
		a.Late += b.Late
		a.BudgetIn += b.BudgetIn
		a.BudgetAtDrop += b.BudgetAtDrop
		a.WaitMs += b.WaitMs
		a.WastedGPUs += b.WastedGPUs
	}
}

// printTrace prints the decision trace of every row (`plan bench pard --trace`).
func printTrace(env benchapi.Env, res *BenchResult) {
	fmt.Fprintln(env.Out, "Decision trace per module (means over seeds; budget = share of the SLO consumed since t_s; wasted = GPU s spent on requests that ended dropped or late):")
	var rows [][]string
	for _, r := range res.Rows {
		rows = append(rows, traceRows(r.App+"-"+r.Trace, r.Policy, r.Decisions)...)
	}
	for _, r := range res.Stress {
		rows = append(rows, traceRows(fmt.Sprintf("%s-stress-%.1fx", r.App, r.Factor), r.Policy, r.Decisions)...)
	}
	env.Table([]string{"workload", "policy", "#", "module", "ran", "dropped", "late", "drop share", "budget in", "budget at drop", "wait ms", "wasted GPU s"}, rows)
	fmt.Fprintln(env.Out)
}

// traceRows formats one run's trace, a row per module.
func traceRows(workload, policy string, tr []ModuleTrace) [][]string {
	var dropped float64
	for _, mt := range tr {
		dropped += mt.Dropped + mt.Late
	}
	var rows [][]string
	for i, mt := range tr {
		share := 0.0
		if dropped > 0 {
			share = (mt.Dropped + mt.Late) / dropped
		}
		rows = append(rows, []string{workload, policy, fmt.Sprint(i), mt.Module, fmt.Sprintf("%.0f", mt.Ran),
			fmt.Sprintf("%.0f", mt.Dropped), fmt.Sprintf("%.0f", mt.Late), pardPct(share), fmt.Sprintf("%.2f", mt.BudgetIn),
			fmt.Sprintf("%.2f", mt.BudgetAtDrop), fmt.Sprintf("%.1f", mt.WaitMs), fmt.Sprintf("%.1f", mt.WastedGPUs)})
	}
	return rows
}
