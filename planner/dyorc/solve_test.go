package dyorc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
)

func load(t *testing.T, name string) formats.Document {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "dyorc", name))
	if err != nil {
		t.Fatal(err)
	}
	d, err := formats.Decode(name, data)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSolveVerifyCompareResolve: the MILP's plan passes the independent checker, equals itself
// per app, survives a re-solve, and a broken plan is caught.
func TestSolveVerifyCompareResolve(t *testing.T) {
	for _, tc := range []struct{ wl, cl string }{{"small.json", "cluster-small.json"}, {"workload.json", "cluster.json"}} {
		t.Run(tc.wl, func(t *testing.T) {
			wl := load(t, tc.wl).(*formats.Workload)
			cl := load(t, tc.cl).(*formats.Cluster)
			p, err := Solve(context.Background(), wl, cl, nil, Options{TimeLimit: 20 * time.Second, Deterministic: true})
			if err != nil {
				t.Fatal(err)
			}
			if v := Verify(p); len(v) > 0 {
				t.Fatalf("violations: %v", v)
			}
			if !(formats.Num(p.Provenance.Gap) >= 0 && formats.Num(p.Provenance.Gap) <= 0.011) {
				t.Fatalf("gap %g", formats.Num(p.Provenance.Gap))
			}
			for _, c := range Compare(p, p, 0) {
				if !c.OK {
					t.Fatalf("self comparison failed: %s", c.Line)
				}
			}
			re, err := Resolve(context.Background(), p, 20*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range Compare(re, p, 0.02) {
				if !c.OK {
					t.Errorf("re-solve: %s", c.Line)
				}
			}
			// Break it: every service on GPU 0 overflows its memory; a replica count lies.
			bad := *p
			dy := *p.DyOrc
			bad.DyOrc = &dy
			var all []string
			for _, d := range dy.Deployments {
				all = append(all, d.Service)
			}
			dy.Placement = []formats.GPUServices{{GPU: 0, Services: all}}
			v := strings.Join(Verify(&bad), "\n")
			if !strings.Contains(v, "replicas, the placement holds") || tc.wl == "workload.json" && !strings.Contains(v, "GB of services") {
				t.Fatalf("broken plan not caught:\n%s", v)
			}
		})
	}
}
