package ppipe

import (
	"fmt"
	"math/rand/v2"

	"github.com/plan-dev/plan/dataplane"
)

// Sample builds a small random PPipe deployment from r: one or two models, each with one or
// two pipelines of one to three stages on pools of one to three (v)GPU workers spread over a
// few servers, latency tables that grow with the batch, and transfers between stages. The
// conformance harness runs every PPipe policy on such deployments (they need not be good
// plans, only valid ones).
func Sample(r *rand.Rand) *dataplane.Deployment {
	d := &dataplane.Deployment{Kind: Kind}
	nsrv := 1 + r.IntN(3)
	for s := 0; s < nsrv; s++ {
		bw := float64(1000 * (1 + r.IntN(20)))
		d.Topo.Servers = append(d.Topo.Servers, dataplane.Server{Name: fmt.Sprintf("srv%d", s), UpMbps: bw, DownMbps: bw})
	}
	for m := 0; m < 1+r.IntN(2); m++ {
		aid := dataplane.AppID(len(d.Apps))
		app := dataplane.App{Name: fmt.Sprintf("m%d", m), Weight: 1}
		var slo dataplane.Time
		cap := 0.0
		for p := 0; p < 1+r.IntN(2); p++ {
			batch := 1 + r.IntN(4)
			var chain []dataplane.StageID
			var pathLat dataplane.Time
			minRate := 0.0
			nst := 1 + r.IntN(3)
			for k := 0; k < nst; k++ {
				sid := dataplane.StageID(len(d.Stages))
				st := dataplane.Stage{Name: fmt.Sprintf("m%d/p%d/s%d", m, p, k), App: aid, Pipeline: p, Index: k, Batch: batch}
				base := dataplane.Time(500 + r.IntN(5000))
				st.LatUs = make([]dataplane.Time, batch+1)
				for b := 1; b <= batch; b++ {
					st.LatUs[b] = base + dataplane.Time(b-1)*base/2
				}
				if k+1 < nst {
					st.Next = []dataplane.StageID{sid + 1}
					st.OutBytes = int64(1000 + r.IntN(100000))
					st.XferPerSampleUs = float64(r.IntN(300))
				}
				vgpu := 1 + r.IntN(2)
				n := 1 + r.IntN(3)
				for c := 0; c < n; c++ {
					sv := dataplane.ServerID(r.IntN(nsrv))
					d.Topo.GPUs = append(d.Topo.GPUs, dataplane.GPU{Type: "L4", Server: sv})
					w := dataplane.WorkerID(len(d.Topo.Workers))
					d.Topo.Workers = append(d.Topo.Workers, dataplane.Worker{Name: fmt.Sprintf("w%d", w), GPU: len(d.Topo.GPUs) - 1,
						Server: sv, Type: "L4", VGPU: vgpu, Stage: sid})
					st.Pool = append(st.Pool, w)
				}
				pathLat += st.LatUs[batch] + st.Xfer(batch)
				rate := float64(n*batch) / (float64(st.LatUs[batch]) / 1e6)
				if minRate == 0 || rate < minRate {
					minRate = rate
				}
				d.Stages = append(d.Stages, st)
				chain = append(chain, sid)
			}
			app.Entry = append(app.Entry, chain[0])
			app.Pipelines = append(app.Pipelines, chain)
			slo = max(slo, 2*pathLat)
			cap += minRate
		}
		app.SLO = slo + dataplane.Time(r.IntN(int(slo)+1))
		app.RateRPS = cap
		d.Apps = append(d.Apps, app)
	}
	return d
}
