package dyorc

import (
	"fmt"
	"math"
	"sync"

	"github.com/plan-dev/plan/dataplane"
)

// Cluster is the GPU side of a deployment: Count identical GPUs, PerServer to a node.
type Cluster struct {
	GPUs      int
	PerServer int
	MemBytes  int64
	Type      string
}

// Net holds the message-passing and loading costs: the tiers of DyOrc §6.2, with our own
// stand-in numbers.
type Net struct {
	// Tier 2 (tensors): NVLink within a node, the network across nodes (bytes/µs, µs).
	NVLinkBpus, NVLinkLatUs float64
	NetBpus, NetLatUs       float64
	// Tier 3 (general data): serialise+deserialise, then a socket within a node.
	SerBpus, SerLatUs, SockBpus float64
	// Loads: host→GPU GB/HostGBps + HostLatUs; the first load on a node reads the disk at
	// DiskSPerGB (every node reads all components into host RAM at start, DyOrc §5.4).
	HostGBps, HostLatUs, DiskUsPerGB float64
	// IngressUs is the API server's enqueue of a request (its upload): the request input's
	// ready time in Eq. 2, which the paper leaves open.
	IngressUs float64
}

// DefaultNet is our stand-in for the paper's A800/NVLink testbed (DyOrc §8), which publishes
// no link costs; with it serialisation is ~79 % of Fig. 3's transfer (the paper's 77 %, §3.3).
var DefaultNet = Net{
	NVLinkBpus: 150e3, NVLinkLatUs: 20, NetBpus: 12e3, NetLatUs: 50,
	SerBpus: 1.5e3, SerLatUs: 1000, SockBpus: 5e3,
	HostGBps: 20, HostLatUs: 300e3, DiskUsPerGB: 4.6e6, IngressUs: 1000,
}

// Meta is what DyOrc's policies know about a deployment beyond dataplane.Deployment: the
// compiled workflows, the GPU↔worker maps and the warm placement.
type Meta struct {
	W   *Workflow
	Net Net
	// Stage tables (indexed by StageID): the app, its node (-1 = the ingress stage) and the
	// node's service (-1 for ingress).
	StageApp, StageNode, StageSvc []int
	// AppBase[a] is the stage of node 0 of app a; Ingress[a] its ingress stage.
	AppBase, Ingress []dataplane.StageID
	IngressWorkers   [][]dataplane.WorkerID
	GPUs             int
	GPUServer        []int
	GPUMem           int64
	// WorkerOf[g][s] is GPU g's worker for stage s; Holder[g][svc] the worker whose model
	// slot holds service svc on GPU g; DevOf[w] the GPU of worker w (-1 = API server).
	WorkerOf [][]dataplane.WorkerID
	Holder   [][]dataplane.WorkerID
	DevOf    []int
	// Warm[g] lists the services resident on GPU g at start (the plan's placement).
	Warm [][]int
}

var metas sync.Map // *dataplane.Deployment → *Meta

// MetaOf returns the DyOrc description of a deployment built by this package.
func MetaOf(d *dataplane.Deployment) (*Meta, bool) {
	m, ok := metas.Load(d)
	if !ok {
		return nil, false
	}
	return m.(*Meta), true
}

// NewDeployment lays out workflows on a cluster (see the package comment). warm[g] lists the
// services GPU g holds at start (nil = none: every first call is a cold start).
func NewDeployment(w *Workflow, c Cluster, warm [][]int, net Net) (*dataplane.Deployment, error) {
	if c.GPUs < 1 {
		return nil, fmt.Errorf("dyorc deployment: %d GPUs: need at least 1", c.GPUs)
	}
	if c.PerServer < 1 {
		c.PerServer = c.GPUs
	}
	m := &Meta{W: w, Net: net, GPUs: c.GPUs, GPUMem: c.MemBytes}
	d := &dataplane.Deployment{Kind: Kind}
	nServers := (c.GPUs + c.PerServer - 1) / c.PerServer
	for s := 0; s < nServers; s++ {
		d.Topo.Servers = append(d.Topo.Servers, dataplane.Server{Name: fmt.Sprintf("node%d", s), UpMbps: 1e5, DownMbps: 1e5})
	}
	for g := 0; g < c.GPUs; g++ {
		d.Topo.GPUs = append(d.Topo.GPUs, dataplane.GPU{Type: c.Type, Server: dataplane.ServerID(g / c.PerServer)})
		m.GPUServer = append(m.GPUServer, g/c.PerServer)
	}
	apiGPU := len(d.Topo.GPUs)
	d.Topo.GPUs = append(d.Topo.GPUs, dataplane.GPU{Type: "api-server", Server: 0})
	for ai := range w.Apps {
		a := &w.Apps[ai]
		aid := dataplane.AppID(ai)
		d.Apps = append(d.Apps, dataplane.App{Name: a.Name, SLO: dataplane.Time(a.SLOUs), Weight: 1, RateRPS: a.RateRPS})
		base := dataplane.StageID(len(d.Stages))
		m.AppBase = append(m.AppBase, base)
		all := make([]dataplane.StageID, len(a.Nodes))
		for n := range a.Nodes {
			all[n] = base + dataplane.StageID(n)
		}
		for n, nd := range a.Nodes {
			sv := &w.Services[nd.Svc]
			lat := make([]dataplane.Time, sv.MaxBatch+1)
			for b := 1; b <= sv.MaxBatch; b++ {
				lat[b] = dataplane.Time(math.Ceil(sv.Lat(b)))
			}
			d.Stages = append(d.Stages, dataplane.Stage{Name: a.Name + "/" + nd.Name, App: aid, Pipeline: -1, Index: n,
				Next: all, Routed: true, Batch: sv.MaxBatch, LatUs: lat, OutBytes: sv.OutBytes, Model: sv.Name})
			m.StageApp = append(m.StageApp, ai)
			m.StageNode = append(m.StageNode, n)
			m.StageSvc = append(m.StageSvc, nd.Svc)
		}
		in := dataplane.StageID(len(d.Stages))
		d.Apps[ai].Entry = []dataplane.StageID{in}
		d.Stages = append(d.Stages, dataplane.Stage{Name: a.Name + "/$in", App: aid, Pipeline: -1, Next: all, Routed: true,
			Batch: 1, LatUs: []dataplane.Time{0, dataplane.Time(net.IngressUs)}})
		m.Ingress = append(m.Ingress, in)
		m.StageApp = append(m.StageApp, ai)
		m.StageNode = append(m.StageNode, -1)
		m.StageSvc = append(m.StageSvc, -1)
	}
	ns := len(d.Stages)
	m.WorkerOf = make([][]dataplane.WorkerID, c.GPUs)
	m.Holder = make([][]dataplane.WorkerID, c.GPUs)
	for g := 0; g < c.GPUs; g++ {
		m.WorkerOf[g] = make([]dataplane.WorkerID, ns)
		m.Holder[g] = make([]dataplane.WorkerID, len(w.Services))
		for i := range m.Holder[g] {
			m.Holder[g][i] = dataplane.NoWorker
		}
		for s := 0; s < ns; s++ {
			m.WorkerOf[g][s] = dataplane.NoWorker
			if m.StageNode[s] < 0 {
				continue
			}
			id := dataplane.WorkerID(len(d.Topo.Workers))
			d.Topo.Workers = append(d.Topo.Workers, dataplane.Worker{Name: fmt.Sprintf("gpu%d/%s", g, d.Stages[s].Name), GPU: g,
				Server: dataplane.ServerID(m.GPUServer[g]), Type: c.Type, VGPU: 1, Stage: dataplane.StageID(s), MemBytes: c.MemBytes})
			d.Stages[s].Pool = append(d.Stages[s].Pool, id)
			m.WorkerOf[g][s] = id
			m.DevOf = append(m.DevOf, g)
			if sv := m.StageSvc[s]; m.Holder[g][sv] == dataplane.NoWorker {
				m.Holder[g][sv] = id
			}
		}
	}
	// Two API-server workers per app enqueue arriving requests [ours].
	for ai := range w.Apps {
		var ws []dataplane.WorkerID
		for k := 0; k < 2; k++ {
			id := dataplane.WorkerID(len(d.Topo.Workers))
			d.Topo.Workers = append(d.Topo.Workers, dataplane.Worker{Name: fmt.Sprintf("api/%s#%d", w.Apps[ai].Name, k), GPU: apiGPU,
				Server: 0, Type: "api-server", VGPU: 1, Stage: m.Ingress[ai]})
			d.Stages[m.Ingress[ai]].Pool = append(d.Stages[m.Ingress[ai]].Pool, id)
			m.DevOf = append(m.DevOf, -1)
			ws = append(ws, id)
		}
		m.IngressWorkers = append(m.IngressWorkers, ws)
	}
	m.Warm = make([][]int, c.GPUs)
	for g := 0; g < c.GPUs && g < len(warm); g++ {
		var used int64
		for _, sv := range warm[g] {
			if sv < 0 || sv >= len(w.Services) {
				return nil, fmt.Errorf("dyorc deployment: GPU %d: no service %d", g, sv)
			}
			used += w.Services[sv].Bytes
			m.Warm[g] = append(m.Warm[g], sv)
		}
		if c.MemBytes > 0 && used > c.MemBytes {
			return nil, fmt.Errorf("dyorc deployment: GPU %d: warm services need %d bytes, the GPU has %d", g, used, c.MemBytes)
		}
	}
	for i := range w.Services {
		if c.MemBytes > 0 && w.Services[i].Bytes > c.MemBytes {
			return nil, fmt.Errorf("dyorc deployment: service %s needs %d bytes, a GPU has %d", w.Services[i].Name, w.Services[i].Bytes, c.MemBytes)
		}
	}
	d.Emulate = m.emulate
	for i := range w.Services {
		if w.Services[i].Spread > 0 {
			d.Work = m.work
			break
		}
	}
	d.Route = m.route
	if err := d.Validate(); err != nil {
		return nil, err
	}
	metas.Store(d, m)
	return d, nil
}

// emulate is the deployment's model of the workflows' control flow: after stage st, request
// r goes to the node the ground truth draws. A request with Attrs.Sample ≠ 0 follows the path
// its sample seeds (the same for every policy, and what the oracle reads); otherwise the
// driver's u draws the transition (the workflow's p: our stand-in for the paper's Python
// workflow code branching on real outputs, DyOrc §4).
func (m *Meta) emulate(st *dataplane.Stage, r *dataplane.Request, u float64) dataplane.Result {
	res := dataplane.Result{Label: -1}
	a := &m.W.Apps[r.App]
	done := r.NumBatches() - 1 // service calls finished, this one included
	var next int
	if r.Attrs.Sample != 0 {
		p := a.Path(SampleRNG(int(r.App), r.Attrs.Sample))
		next = Exit
		if done < len(p) {
			next = p[done]
		}
	} else {
		node, round := -1, 0
		if st.Index >= 0 && st.Model != "" {
			node = st.Index
			if a.Loop != nil {
				round = (done - 1) / max(len(a.Loop.Body), 1)
			}
		}
		g := uRNG(u)
		next, _ = a.Next(node, round, g.r)
		putURNG(g)
	}
	if next == Exit {
		res.Exit = true
		return res
	}
	res.Branch = int32(next)
	return res
}

// TruePath returns request r's remaining ground-truth path as node indices when it carries a
// sample (the oracle's knowledge); ok is false otherwise.
func (m *Meta) TruePath(r *dataplane.Request) ([]int, bool) {
	if r.Attrs.Sample == 0 {
		return nil, false
	}
	return m.W.Apps[r.App].Path(SampleRNG(int(r.App), r.Attrs.Sample)), true
}

// LoadUs is the time to load service sv on a node: from host RAM, or from disk the first time
// the node reads it (cold = true).
func (m *Meta) LoadUs(sv int, cold bool) float64 {
	s := &m.W.Services[sv]
	t := s.WeightGB/m.Net.HostGBps*1e6 + m.Net.HostLatUs
	if cold {
		t += s.WeightGB * m.Net.DiskUsPerGB
	}
	return t
}

// Comm is the time to move items outputs of service sv from GPU from to GPU to (DyOrc §6.2):
// zero on the same GPU, the tensor tier or serialised RPC otherwise. from < 0 is the API
// server (whose upload the ingress stage already charged).
func (m *Meta) Comm(from, to, sv, items int) float64 {
	if from == to || from < 0 || sv < 0 {
		return 0
	}
	s := &m.W.Services[sv]
	b := float64(s.OutBytes) * float64(max(items, 1))
	same := m.GPUServer[from] == m.GPUServer[to]
	n := &m.Net
	if s.Tensor {
		if same {
			return b/n.NVLinkBpus + n.NVLinkLatUs
		}
		return b/n.NetBpus + n.NetLatUs
	}
	t := b/n.SerBpus + n.SerLatUs
	if same {
		return t + b/n.SockBpus
	}
	return t + b/n.NetBpus + n.NetLatUs
}

// Tier3 is the cost of moving the outputs as general data (serialised RPC) even between
// services on the same GPU: how Ray Serve passes every hop (it has no zero-copy path for GPU
// tensors, DyOrc §3.3).
func (m *Meta) Tier3(from, to, sv, items int) float64 {
	if from < 0 || sv < 0 {
		return 0
	}
	s := &m.W.Services[sv]
	b := float64(s.OutBytes) * float64(max(items, 1))
	n := &m.Net
	t := b/n.SerBpus + n.SerLatUs
	if from == to || m.GPUServer[from] == m.GPUServer[to] {
		return t + b/n.SockBpus
	}
	return t + b/n.NetBpus + n.NetLatUs
}
