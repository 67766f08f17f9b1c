package ppipe

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// sharedServerDeployment is the shape that starved a pipeline in the PPipe authors' own
// set-up once FromPlan had to pack two pools onto one server: app "short" sends its first
// stage's output (2 ms) into a worker on server 0, app "long" its first stage's (50 ms) into
// another worker on the same server, each transfer 1 ms a sample over server 0's downlink,
// at rates the NIC carries with room (short 200 + long 80 = 28% of it).
func sharedServerDeployment() *dataplane.Deployment {
	d := &dataplane.Deployment{Kind: Kind}
	for s := range 3 {
		d.Topo.Servers = append(d.Topo.Servers, dataplane.Server{Name: fmt.Sprintf("srv%d", s), UpMbps: 8000, DownMbps: 8000})
	}
	worker := func(sid dataplane.StageID, sv dataplane.ServerID) dataplane.WorkerID {
		d.Topo.GPUs = append(d.Topo.GPUs, dataplane.GPU{Type: "L4", Server: sv})
		w := dataplane.WorkerID(len(d.Topo.Workers))
		d.Topo.Workers = append(d.Topo.Workers, dataplane.Worker{Name: fmt.Sprintf("w%d", w), GPU: len(d.Topo.GPUs) - 1,
			Server: sv, Type: "L4", VGPU: 1, Stage: sid})
		return w
	}
	app := func(name string, first dataplane.Time, firstWorkers int, from dataplane.ServerID, slo dataplane.Time, rate float64) {
		aid := dataplane.AppID(len(d.Apps))
		s0 := dataplane.StageID(len(d.Stages))
		head := dataplane.Stage{Name: name + "/p0/s0", App: aid, Index: 0, Batch: 1, LatUs: []dataplane.Time{0, first},
			Next: []dataplane.StageID{s0 + 1}, OutBytes: 1000, XferPerSampleUs: 1000}
		for range firstWorkers {
			head.Pool = append(head.Pool, worker(s0, from))
		}
		tail := dataplane.Stage{Name: name + "/p0/s1", App: aid, Index: 1, Batch: 1, LatUs: []dataplane.Time{0, 1000}}
		tail.Pool = []dataplane.WorkerID{worker(s0+1, 0)}
		d.Stages = append(d.Stages, head, tail)
		d.Apps = append(d.Apps, dataplane.App{Name: name, Weight: 1, SLO: slo, RateRPS: rate,
			Entry: []dataplane.StageID{s0}, Pipelines: [][]dataplane.StageID{{s0, s0 + 1}}})
	}
	app("short", 2000, 1, 1, 10000, 200)
	app("long", 50000, 6, 2, 150000, 80)
	return d
}

// TestSharedServerNICsFillGaps: where two pools share a server, its NICs fill gaps, so the
// short-lead pipeline's transfers go between the long one's, booked 50 ms ahead, and both
// apps are served; with every NIC busy-until (the authors' simulator, which never shares a
// server between pools) the short app's transfers queue behind the long app's last booking
// and it misses its 10 ms SLO on most requests. Servers that serve one stage keep
// busy-until. (Under large jitter both suffer: the engine runs a link's transfers in
// reserved order, so a transfer whose batch ran late holds those reserved after it.)
func TestSharedServerNICsFillGaps(t *testing.T) {
	att := func(busy bool, jitter float64) []float64 {
		dep := sharedServerDeployment()
		var pol dataplane.Policy = NewPPipe(PPipeOptions{Penalty: true, Admission: true})
		if busy {
			pol = busyAttach{pol.(*PPipe)}
		}
		return onTimeShares(t, &miniSim{r: rand.New(rand.NewPCG(3, 4)), jitter: jitter}, dep, pol, 1, 2*dataplane.Second)
	}
	for _, jitter := range []float64{0, 0.05} {
		gaps, busy := att(false, jitter), att(true, jitter)
		t.Logf("jitter ±%.0f%%: on time, short / long: shared server's NICs fill gaps %.3f / %.3f; every NIC busy-until %.3f / %.3f",
			100*jitter, gaps[0], gaps[1], busy[0], busy[1])
		if gaps[0] < 0.97 || gaps[1] < 0.97 {
			t.Errorf("jitter ±%.0f%%, shared server's NICs filling gaps: on time %.3f / %.3f, want both ≥ 0.97", 100*jitter, gaps[0], gaps[1])
		}
		if busy[0] > 0.5 {
			t.Errorf("jitter ±%.0f%%, every NIC busy-until: the short app on time %.3f; the deployment no longer shows the starvation (want < 0.5)", 100*jitter, busy[0])
		}
	}
	// Only server 0 is shared: its two NICs fill gaps, the other servers' stay busy-until.
	p := NewPPipe(PPipeOptions{})
	if _, err := dataplane.NewEngine(sharedServerDeployment(), p, nopEffects{}); err != nil {
		t.Fatal(err)
	}
	for i, f := range p.res.fill {
		want := i == p.nw || i == p.nw+p.ns
		if f != want {
			t.Errorf("resource %d fills gaps %v, want %v", i, f, want)
		}
	}
}

// busyAttach is a dispatcher whose Attach leaves every NIC busy-until (busyNICs).
type busyAttach struct{ *PPipe }

func (b busyAttach) Attach(v dataplane.View) error {
	if err := b.PPipe.Attach(v); err != nil {
		return err
	}
	busyNICs(b.PPipe)
	return nil
}

// TestPackedNeighboursSharedLast is a plan of the PPipe authors' set-up whose V100 groups
// cannot each start on a fresh server (25 V100, four a server): the short-SLO model m0's
// second stage (3 V100, 27.7 ms SLO, 4.3 ms of slack) shares its server with one GPU of
// m1's second-stage pool, whose 5.3 ms transfers, booked a stage (63 ms) ahead, took the
// downlink m0's 1.9 ms transfers need. With m1's shared GPU first in its pool, the
// dispatcher's lowest-index choice sent m1's transfers there at any load, and m0 dropped
// 3% of its requests at 0.3 of the plan's rates. Every pool now lists its workers on
// shared servers last.
func TestPackedNeighboursSharedLast(t *testing.T) {
	dep := loadFixture(t, "packed-neighbours.json")
	type owner struct {
		app, index int
		gpu        string
	}
	owners := map[dataplane.ServerID]map[owner]bool{}
	for _, st := range dep.Stages {
		for _, w := range st.Pool {
			s := dep.Topo.Workers[w].Server
			if owners[s] == nil {
				owners[s] = map[owner]bool{}
			}
			owners[s][owner{int(st.App), st.Index, dep.Topo.Workers[w].Type}] = true
		}
	}
	sharedServers := 0
	for _, o := range owners {
		if len(o) > 1 {
			sharedServers++
		}
	}
	if sharedServers == 0 {
		t.Fatal("no server is shared between groups: the fixture no longer shows the packing")
	}
	for _, st := range dep.Stages {
		seenShared := false
		for i, w := range st.Pool {
			shared := len(owners[dep.Topo.Workers[w].Server]) > 1
			if seenShared && !shared {
				t.Errorf("stage %s: worker %d (%s) on an unshared server follows one on a shared server", st.Name, i, dep.Topo.Workers[w].Name)
			}
			seenShared = seenShared || shared
		}
	}
	shares := onTimeShares(t, &miniSim{r: rand.New(rand.NewPCG(5, 6))}, dep, NewPPipe(PPipeOptions{Penalty: true, Admission: true}), 0.3, 4*dataplane.Second)
	for a, share := range shares {
		t.Logf("%s: %.4f on time", dep.Apps[a].Name, share)
		if share < 0.99 {
			t.Errorf("%s at 0.3 of the plan's rates: %.4f on time, want ≥ 0.99", dep.Apps[a].Name, share)
		}
	}
}

// onTimeShares runs dep under pol on s at load for dur and returns each app's share of
// finished requests completed on time.
func onTimeShares(t *testing.T, s *miniSim, dep *dataplane.Deployment, pol dataplane.Policy, load float64, dur dataplane.Time) []float64 {
	t.Helper()
	n := make([]int, len(dep.Apps))
	ok := make([]int, len(dep.Apps))
	s.finish = func(r *dataplane.Request) {
		n[r.App]++
		if r.Outcome == dataplane.Completed {
			ok[r.App]++
		}
	}
	runMini(t, s, dep, pol, load, dur, nil)
	out := make([]float64, len(n))
	for a := range n {
		if n[a] == 0 {
			t.Fatalf("app %s: no request finished", dep.Apps[a].Name)
		}
		out[a] = float64(ok[a]) / float64(n[a])
	}
	return out
}
