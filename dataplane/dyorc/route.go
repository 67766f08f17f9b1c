package dyorc

import "github.com/plan-dev/plan/dataplane"

// Candidates lists, in order, where a request can go after node cur (-1 = it just arrived)
// in loop round round (0-based): the nodes of the next step (a choice's services in name
// order), then — while that step has a guard, so may be skipped — those of the step after,
// and Exit when every remaining step may be skipped or the workflow ends (a loop: the next
// round's first nodes, then Exit, until max_iter rounds). It is the set a model's output
// chooses from when real outputs decide the branches (Route).
func (a *App) Candidates(cur, round int) []int {
	steps := a.body()
	from := 0
	if cur >= 0 {
		from = a.Nodes[cur].Step + 1
	}
	var out []int
	for j := from; j < len(steps); j++ {
		out = append(out, a.stepNodes[j]...)
		if steps[j].When == "" {
			return out
		}
	}
	if a.Loop != nil && round+1 < a.Loop.MaxIter {
		out = append(out, a.Candidates(-1, round+1)...)
		if out[len(out)-1] == Exit {
			return out
		}
	}
	return append(out, Exit)
}

// route maps a stage's real model output to the request's next node (Deployment.Route):
// the output's class picks among the node's candidates, class mod their number (a stage
// that runs no model, the API server's ingress, reports class -1 and takes the first). The
// workflow's probabilities play no part: the model decides, as the paper's workflows branch
// on what a component answered (DyOrc §2.1: a guard on an output, an LLM choosing a tool).
func (m *Meta) route(st *dataplane.Stage, r *dataplane.Request, out dataplane.Result) dataplane.Result {
	return m.routeAt(st, r.App, r.NumBatches(), out)
}

// routeAt is route for a request of app in its visits-th batch (the one just ended).
func (m *Meta) routeAt(st *dataplane.Stage, app dataplane.AppID, visits int, out dataplane.Result) dataplane.Result {
	a := &m.W.Apps[app]
	node, round := -1, 0
	if st.Index >= 0 && st.Model != "" {
		node = st.Index
		if a.Loop != nil {
			round = (visits - 1) / max(len(a.Loop.Body), 1)
		}
	}
	c := a.Candidates(node, round)
	k := 0
	if out.Label > 0 {
		k = int(out.Label) % len(c)
	}
	out.Exit, out.Branch = false, 0
	if c[k] == Exit {
		out.Exit = true
	} else {
		out.Branch = int32(c[k])
	}
	return out
}
