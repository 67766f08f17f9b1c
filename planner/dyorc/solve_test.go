package dyorc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/planner"
)

func load(t *testing.T, name string) formats.Document {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "dyorc", name))
	if err != nil {
		t.Fatal(err)
	}
	d, err := formats.Decode(name, data, intree.Sections())
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
			re, err := Resolve(context.Background(), p, 20*time.Second, testSim)
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
			dy := *dyorcsec.PlanOf(p)
			dyorcsec.SetPlan(&bad, &dy)
			var all []string
			for _, d := range dy.Deployments {
				all = append(all, d.Service)
			}
			dy.Placement = []dyorcsec.GPUServices{{GPU: 0, Services: all}}
			v := strings.Join(Verify(&bad), "\n")
			if !strings.Contains(v, "replicas, the placement holds") || tc.wl == "workload.json" && !strings.Contains(v, "GB of services") {
				t.Fatalf("broken plan not caught:\n%s", v)
			}
		})
	}
}

// TestResolveRecordedLimit: a solve that stops at its time limit records it, and check
// --resolve (Resolve with no limit of its own) re-solves under it rather than running on to
// the gap: the 32-GPU workflow cluster, which stops at a 2 s limit well short of 0.1%; a
// solve that ends within its limit records none (a plan solved at the default 60 s limit
// keeps the options it always had).
func TestResolveRecordedLimit(t *testing.T) {
	if limitIfHit("optimal", time.Minute) != 0 || limitIfHit("time-limit", 2*time.Second) != formats.Duration(2*time.Second) {
		t.Fatal("limitIfHit")
	}
	wl := load(t, "workload.json").(*formats.Workload)
	cl := load(t, "cluster-32.json").(*formats.Cluster)
	p, err := Solve(context.Background(), wl, cl, nil, Options{TimeLimit: 2 * time.Second, Deterministic: true})
	if err != nil {
		t.Fatal(err)
	}
	var rec Flags
	if err := planner.ReadOptions(p.Provenance.Options, &rec); err != nil {
		t.Fatal(err)
	}
	if p.Provenance.Status != "time-limit" {
		t.Skipf("solved to the gap within 2 s (%s): nothing to re-solve under a limit", p.Provenance.Status)
	}
	if time.Duration(rec.TimeLimit) != 2*time.Second {
		t.Fatalf("options %s: time limit %v, want 2s", p.Provenance.Options, rec.TimeLimit)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Resolve(ctx, p, 0, testSim); err != nil {
		t.Fatalf("re-solve under the recorded limit: %v", err)
	}
}

// TestSolveMinGPUs: --min-gpus places the small workload on the fewest GPUs whose plan holds
// every app's rate in simulation (4 of 16: fewer leave an app below its target), and refuses
// a cluster too small at every count, naming the share the best count serves.
func TestSolveMinGPUs(t *testing.T) {
	wl, cl := readInputs(t, "dyorc/small.json", "dyorc/cluster-small.json")
	for _, tc := range []struct {
		gpus, want int
		err        string
	}{{16, 4, ""}, {4, 4, ""}, {2, 0, "no count of the cluster's 2 A800 GPUs serves every app's rate"}} {
		c := *cl
		c.GPUs = append([]formats.GPUPool(nil), cl.GPUs...)
		c.GPUs[0].Count = tc.gpus
		p, err := SolveMinGPUs(context.Background(), wl, &c, nil, Options{Deterministic: true, Sim: testSim})
		if tc.err != "" {
			if !errors.Is(err, planner.ErrInput) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%d GPUs: %v, want an input error with %q", tc.gpus, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d GPUs: %v", tc.gpus, err)
		}
		if got := len(dyorcsec.PlanOf(p).Placement); got != tc.want {
			t.Errorf("%d GPUs: placed on %d, want %d", tc.gpus, got, tc.want)
		}
		if ok, err := holdsRates(context.Background(), testSim, p); err != nil || !ok {
			t.Errorf("%d GPUs: the plan does not hold the rates in simulation (%v)", tc.gpus, err)
		}
		if p.Provenance.Embedded.Cluster.GPUs[0].Count != tc.gpus {
			t.Errorf("the plan embeds the cluster as given (%d GPUs), not the %d it uses", tc.gpus, tc.want)
		}
	}
}
