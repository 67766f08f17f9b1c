package dyorc

import (
	"fmt"
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// names renders node indices (Exit as "exit").
func names(a *App, ns []int) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = "exit"
		if n != Exit {
			out[i] = a.Nodes[n].Name
		}
	}
	return out
}

func appNamed(t *testing.T, w *Workflow, name string) (int, *App) {
	t.Helper()
	for i := range w.Apps {
		if w.Apps[i].Name == name {
			return i, &w.Apps[i]
		}
	}
	t.Fatalf("no app %s", name)
	return 0, nil
}

// TestCandidates: where a request can go next — a choice's services, a guarded step and
// what follows it, the end, a loop's next round until max_iter.
func TestCandidates(t *testing.T) {
	w := loadWorkflow(t, "workload.json")
	tests := []struct {
		app         string
		node, round int
		want        []string
	}{
		{"image", -1, 0, []string{"det"}},
		{"image", 0, 0, []string{"read:cap", "read:ocr"}},
		{"image", 1, 0, []string{"up", "exit"}},
		{"image", 3, 0, []string{"exit"}},
		{"gill", -1, 0, []string{"enc", "llm"}},
		{"gill", 1, 0, []string{"gen", "exit"}},
		{"debate", 0, 0, []string{"agent", "exit"}},
		{"debate", 0, 3, []string{"exit"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.app, tc.node, tc.round), func(t *testing.T) {
			_, a := appNamed(t, w, tc.app)
			if got := names(a, a.Candidates(tc.node, tc.round)); !slices.Equal(got, tc.want) {
				t.Errorf("candidates %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRoute: a model's class picks among the candidates (mod their number), the ingress
// (class -1) takes the first, and a debate loop ends after max_iter rounds whatever the
// model says.
func TestRoute(t *testing.T) {
	w := loadWorkflow(t, "workload.json")
	m := &Meta{W: w}
	ai, a := appNamed(t, w, "image")
	st := func(node int) *dataplane.Stage {
		if node < 0 {
			return &dataplane.Stage{Index: -1}
		}
		return &dataplane.Stage{Index: node, Model: w.Services[a.Nodes[node].Svc].Name}
	}
	req := &dataplane.Request{App: dataplane.AppID(ai)}
	for _, tc := range []struct {
		node  int
		label int32
		want  string
	}{
		{-1, -1, "det"}, {0, 0, "read:cap"}, {0, 1, "read:ocr"}, {0, 2, "read:cap"}, {0, -1, "read:cap"},
		{1, 0, "up"}, {1, 3, "exit"}, {3, 1, "exit"},
	} {
		res := m.route(st(tc.node), req, dataplane.Result{Label: tc.label, Certainty: 0.5})
		got := "exit"
		if !res.Exit {
			got = a.Nodes[res.Branch].Name
		}
		if got != tc.want || res.Label != tc.label || res.Certainty != 0.5 {
			t.Errorf("node %d class %d: %s (%+v), want %s with the model's output kept", tc.node, tc.label, got, res, tc.want)
		}
	}
	di, d := appNamed(t, w, "debate")
	agent := &dataplane.Stage{Index: 0, Model: w.Services[d.Nodes[0].Svc].Name}
	for round := 0; round < d.Loop.MaxIter; round++ {
		res := m.routeAt(agent, dataplane.AppID(di), round+1, dataplane.Result{Label: 0})
		if last := round == d.Loop.MaxIter-1; res.Exit != last {
			t.Errorf("round %d: exit %v, want %v (max_iter %d)", round, res.Exit, last, d.Loop.MaxIter)
		}
	}
}
