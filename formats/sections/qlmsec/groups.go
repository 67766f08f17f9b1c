package qlmsec

import (
	"math"
	"sort"

	"github.com/plan-dev/plan/formats/llmspec"
)

// QueueInitialGroups adds to q one request group per class, tightest SLO first (ties in the
// classes' order) and sized to the class's rate (at least one request), and queues each on
// the instances hosts lists for its class in turn, round robin per model: the initial plan
// that QLM's planner and the deployment search (planner/llmdeploy) both write, so the two
// queue alike. A class hosts lists no instance for keeps its group unqueued.
func QueueInitialGroups(q *QLMPlan, classes []llmspec.LLMClass, hosts func(cl llmspec.LLMClass) []int) {
	order := make([]int, len(classes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return classes[order[a]].SLO < classes[order[b]].SLO })
	next := map[string]int{}
	for _, ci := range order {
		cl := classes[ci]
		id := "rg-" + cl.Name
		q.Groups = append(q.Groups, QLMGroup{ID: id, Model: cl.Model, Class: cl.Name, SLO: cl.SLO,
			Requests: max(1, int(math.Ceil(cl.RateRPS)))})
		hs := hosts(cl)
		if len(hs) == 0 {
			continue
		}
		h := hs[next[cl.Model]%len(hs)]
		next[cl.Model]++
		q.Instances[h].Queue = append(q.Instances[h].Queue, id)
	}
}
