package cascade_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	dpc "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/sim"
)

// TestIndexMatchesScanSimulations runs whole simulations with the deficit-routing index, the
// co-located replica lists (deficit.go) and the ready-GPU candidates (ready.go) and again with the scans they replace, and requires identical runs: every indexed routing choice equals the scan's at
// that moment, and every request and batch (IDs, workers, times, outcomes) is the same.
// Deployments: the golden plan scaled (one share group per position), the same with random
// shares drawn from a few values (several groups, ties between them) or all distinct, the
// conformance samples, and replica failures (the scan path while one is down, the index
// again after it is back).
func TestIndexMatchesScanSimulations(t *testing.T) {
	type tc struct {
		name string
		dep  *dataplane.Deployment
		fail []sim.Failure
		load float64
	}
	var cases []tc
	for _, k := range []int{1, 3} {
		cases = append(cases, tc{fmt.Sprintf("golden×%d", k), scaledDeployment(t, k), nil, 0.7})
		// At a low rate the first model's trigger (b1 up to 64) is not reached within a
		// poll and queues start on their head's timeout (the aging heap of ready.go).
		cases = append(cases, tc{fmt.Sprintf("golden×%d/low rate", k), scaledDeployment(t, k), nil, 0.03})
	}
	for seed := uint64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewPCG(seed, 9))
		cases = append(cases, tc{fmt.Sprintf("golden×4/few shares/%d", seed), reshare(t, 4, r, 3), nil, 0.7})
		cases = append(cases, tc{fmt.Sprintf("golden×3/distinct shares/%d", seed), reshare(t, 3, r, 0), nil, 0.7})
		cases = append(cases, tc{fmt.Sprintf("golden×2/failure/%d", seed), scaledDeployment(t, 2),
			[]sim.Failure{{Worker: dataplane.WorkerID(r.IntN(12)), At: 300 * dataplane.Millisecond, Until: 700 * dataplane.Millisecond}}, 0.7})
	}
	for seed := uint64(1); seed <= 8; seed++ {
		cases = append(cases, tc{fmt.Sprintf("sample/%d", seed), dpc.Sample(rand.New(rand.NewPCG(seed, 7))), nil, 0.3 + 0.2*float64(seed%4)})
	}
	var checked int
	for _, c := range cases {
		for _, pol := range []string{dpc.PolicyGears, dpc.PolicyNoSwitch} {
			t.Run(c.name+"/"+pol, func(t *testing.T) {
				idx := indexRun(t, c.dep, pol, c.fail, c.load, false, &checked)
				ref := indexRun(t, c.dep, pol, c.fail, c.load, true, nil)
				if len(idx.Requests()) == 0 {
					t.Fatal("no requests")
				}
				if !reflect.DeepEqual(idx.Requests(), ref.Requests()) {
					t.Fatal("requests differ between the index and the scan")
				}
				if !reflect.DeepEqual(idx.Batches(), ref.Batches()) {
					t.Fatal("batches differ between the index and the scan")
				}
			})
		}
	}
	t.Logf("%d routing choices compared", checked)
	if checked == 0 {
		t.Fatal("no indexed routing choice was made")
	}
}

// indexRun simulates dep for one second under pol at load × its rate (Poisson), by scans or
// by the indexes; with checked set, every indexed routing choice is compared with the scan's.
func indexRun(t *testing.T, dep *dataplane.Deployment, pol string, fail []sim.Failure, load float64, scan bool, checked *int) *dataplane.Engine {
	t.Helper()
	p, err := dpc.Registry().New(dep, dataplane.Config{Policy: pol}, dpc.PolicyGears)
	if err != nil {
		t.Fatal(err)
	}
	cp := p.(*dpc.Policy)
	dpc.SetScan(cp, scan)
	if checked != nil {
		dpc.CheckRoute(cp, func(index, scan int) {
			*checked++
			if index != scan {
				t.Fatalf("routing choice %d: index picked replica %d, the scan %d", *checked, index, scan)
			}
		})
	}
	spec, _ := sim.ParseArrival("poisson")
	src, err := spec.New(dep.Apps[0].RateRPS*load, dep.Apps[0].Name, 3)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(dep, p, []sim.Source{src}, sim.Options{Duration: dataplane.Second, Seed: 1, Failures: fail, Horizon: 600 * dataplane.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	return s.Engine
}

// reshare is the golden plan scaled k-fold with every gear's shares redrawn: from nvals
// values (several share groups per position, equal products across them), or all distinct
// when nvals is 0; about one replica in eight gets no share.
func reshare(t *testing.T, k int, r *rand.Rand, nvals int) *dataplane.Deployment {
	t.Helper()
	p := scaledPlan(t, k)
	for gi := range cascadesec.PlanOf(p).Gears {
		for _, sh := range cascadesec.PlanOf(p).Gears[gi].Share {
			for i := range sh {
				switch {
				case i > 0 && r.IntN(8) == 0:
					sh[i] = 0
				case nvals > 0:
					sh[i] = float64(1+r.IntN(nvals)) / float64(len(sh))
				default:
					sh[i] = (0.1 + r.Float64()) / float64(len(sh))
				}
			}
		}
	}
	d, err := dpc.FromPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
