package cascade

import (
	"container/heap"
	"math"
	"sort"
)

// Replica is one copy of a model on one GPU, or on an aligned group of GPUs inside one
// server for a multi-GPU model (CascadeServe §4.4; never across servers, since an inference
// server owns its GPUs, §5).
type Replica struct {
	Model int
	GPUs  []int
}

// Gear is the cascade and routing serving one QPS range (CascadeServe §3–§4).
type Gear struct {
	QLo, QHi float64
	C        Cascade
	// Share[i][k] is the fraction of stage i's load sent to the k-th replica of model
	// C.Models[i] (in placement order).
	Share [][]float64
	// B1 is the stage-1 trigger (later stages trigger at 1).
	B1 int
	// Sim is the last simulation at QHi: the paper does not say which QPS of a range it
	// evaluates; the upper bound keeps a latency SLO valid over the whole range.
	Sim       SimResult
	Overload  bool
	Simulated bool
}

// SimResult is what the planner's simulator reports for a gear at a constant rate (App. C.1).
type SimResult struct {
	PLat      float64   // p-th percentile end-to-end latency, seconds
	Util      []float64 // per GPU
	Sustained bool
	Acc       float64
	// Bottleneck is the first stage (cascade position) whose queue grew or whose GPU
	// saturated; -1 when sustained.
	Bottleneck int
	Backlog    int
}

// SimOptions set the planner simulator's horizon and batching limits.
type SimOptions struct {
	Percentile float64
	// Horizon is the simulated time in seconds (artifact 10 s); MinArrivals raises it for
	// low rates and MaxArrivals caps it for high ones [ours: bounded cost per gear].
	Horizon     float64
	MaxArrivals int
	MaxBatch    int
}

type simReq struct {
	arr   float64
	stage int
	done  bool
}

type simEv struct {
	t   float64
	rep int // replica finishing a batch
	seq int
}
type simHeap []simEv

func (h simHeap) Len() int { return len(h) }
func (h simHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}
func (h simHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *simHeap) Push(x any)   { *h = append(*h, x.(simEv)) }
func (h *simHeap) Pop() any {
	o := *h
	x := o[len(o)-1]
	*h = o[:len(o)-1]
	return x
}

// SimulateGear runs gear g at constant rate q (evenly spaced arrivals) on placement pl with
// nGPU GPUs: request i replays validation sample i mod N; per-replica FIFO queues; a GPU runs
// one batch at a time (a multi-GPU replica holds its whole group); a queue at or above its
// trigger takes everything queued up to MaxBatch, oldest head first among the ready queues of
// a GPU (the paper leaves intra-GPU order open; this is deterministic); forwarded samples go
// to a co-located replica of the next model first, otherwise by deficit over the gear's shares
// (§5).
func (t *Task) SimulateGear(pl []Replica, nGPU int, g *Gear, q float64, o SimOptions) SimResult {
	if o.Percentile <= 0 {
		o.Percentile = 0.95
	}
	if o.Horizon <= 0 {
		o.Horizon = 10
	}
	if o.MaxArrivals <= 0 {
		o.MaxArrivals = 10000
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 1000
	}
	H := o.Horizon
	if q*H > float64(o.MaxArrivals) {
		H = math.Max(float64(o.MaxArrivals)/q, 1)
	}
	k := len(g.C.Models)
	// Replicas per stage, and GPU → replicas.
	stageReps := make([][]int, k)
	pos := map[int]int{}
	for i, m := range g.C.Models {
		pos[m] = i
	}
	for ri, r := range pl {
		if i, ok := pos[r.Model]; ok {
			stageReps[i] = append(stageReps[i], ri)
		}
	}
	onGPU := make([][]int, nGPU)
	for ri, r := range pl {
		if _, ok := pos[r.Model]; !ok {
			continue
		}
		for _, d := range r.GPUs {
			onGPU[d] = append(onGPU[d], ri)
		}
	}
	share := make([][]float64, k)
	for i := range share {
		share[i] = make([]float64, len(stageReps[i]))
		if i < len(g.Share) && len(g.Share[i]) == len(stageReps[i]) {
			copy(share[i], g.Share[i])
		} else {
			for j := range share[i] {
				share[i][j] = 1 / float64(len(share[i]))
			}
		}
	}
	sent := make([][]float64, k)
	total := make([]float64, k)
	for i := range sent {
		sent[i] = make([]float64, len(stageReps[i]))
	}
	route := func(i int) int { // deficit routing over shares
		total[i]++
		best, bv := -1, math.Inf(-1)
		for j := range stageReps[i] {
			if share[i][j] <= 0 {
				continue
			}
			if v := share[i][j]*total[i] - sent[i][j]; v > bv {
				best, bv = j, v
			}
		}
		if best < 0 {
			best = 0
		}
		sent[i][best]++
		return stageReps[i][best]
	}
	queues := make([][]int32, len(pl))
	qhead := make([]int, len(pl))
	gpuBusy := make([]bool, nGPU)
	busyTime := make([]float64, nGPU)
	running := make([][]int32, len(pl))
	var reqs []simReq
	var lats []float64
	right := 0
	finished := 0
	h := &simHeap{}
	seq := 0
	trigger := func(ri int) int {
		if pos[pl[ri].Model] == 0 {
			return max(g.B1, 1)
		}
		return 1
	}
	qlen := func(ri int) int { return len(queues[ri]) - qhead[ri] }
	tryGPU := func(now float64, d int) {
		for !gpuBusy[d] {
			best, bt := -1, math.Inf(1)
			for _, ri := range onGPU[d] {
				if qlen(ri) < trigger(ri) {
					continue
				}
				free := true
				for _, e := range pl[ri].GPUs {
					free = free && !gpuBusy[e]
				}
				if !free {
					continue
				}
				if a := reqs[queues[ri][qhead[ri]]].arr; a < bt {
					best, bt = ri, a
				}
			}
			if best < 0 {
				return
			}
			n := min(qlen(best), o.MaxBatch)
			running[best] = append(running[best][:0], queues[best][qhead[best]:qhead[best]+n]...)
			qhead[best] += n
			if qhead[best] > 1024 && qhead[best]*2 > len(queues[best]) {
				queues[best] = append(queues[best][:0], queues[best][qhead[best]:]...)
				qhead[best] = 0
			}
			dur := t.Models[pl[best].Model].Lat(n) / 1e6
			for _, e := range pl[best].GPUs {
				gpuBusy[e] = true
				busyTime[e] += math.Min(dur, math.Max(H-now, 0))
			}
			seq++
			heap.Push(h, simEv{t: now + dur, rep: best, seq: seq})
		}
	}
	enqueue := func(now float64, ri int, id int32) {
		queues[ri] = append(queues[ri], id)
		for _, d := range pl[ri].GPUs {
			tryGPU(now, d)
		}
	}
	n := int(math.Ceil(q * H))
	if q <= 0 {
		n = 0
	}
	measured := int(0.8 * float64(n))
	if measured < 1 {
		measured = n
	}
	dt := 1 / math.Max(q, 1e-9)
	next := 0
	var backlogMid int
	midDone := false
	for {
		ta := math.Inf(1)
		if next < n {
			ta = float64(next) * dt
		}
		te := math.Inf(1)
		if h.Len() > 0 {
			te = (*h)[0].t
		}
		now := math.Min(ta, te)
		if now >= H || math.IsInf(now, 1) {
			break
		}
		if !midDone && now >= H/2 {
			midDone = true
			backlogMid = len(reqs) - finished
		}
		if ta <= te {
			id := int32(len(reqs))
			reqs = append(reqs, simReq{arr: ta})
			next++
			enqueue(now, route(0), id)
			continue
		}
		ev := heap.Pop(h).(simEv)
		ri := ev.rep
		for _, d := range pl[ri].GPUs {
			gpuBusy[d] = false
		}
		st := pos[pl[ri].Model]
		for _, id := range running[ri] {
			r := &reqs[id]
			s := int(id) % t.N
			m := pl[ri].Model
			if st < k-1 && t.Cert[m][s] < g.C.Thr[st] {
				r.stage = st + 1
				// co-located replica of the next model first (§5), else deficit routing.
				target := -1
				for j, rj := range stageReps[st+1] {
					if share[st+1][j] > 0 && sameGPU(pl[rj].GPUs, pl[ri].GPUs) {
						target = rj
						break
					}
				}
				if target < 0 {
					target = route(st + 1)
				}
				queues[target] = append(queues[target], id)
				continue
			}
			r.done = true
			finished++
			if int(id) < measured {
				lats = append(lats, now-r.arr)
			}
			if t.Correct[m][s] {
				right++
			}
		}
		for _, d := range pl[ri].GPUs {
			tryGPU(now, d)
		}
		// forwarded requests may have made other GPUs' queues ready
		if st < k-1 {
			for _, rj := range stageReps[st+1] {
				for _, d := range pl[rj].GPUs {
					tryGPU(now, d)
				}
			}
		}
	}
	res := SimResult{Util: make([]float64, nGPU), Bottleneck: -1, Backlog: len(reqs) - finished}
	for d := range busyTime {
		res.Util[d] = busyTime[d] / H
	}
	unfinished := 0
	for id := 0; id < min(measured, len(reqs)); id++ {
		if !reqs[id].done {
			lats = append(lats, H-reqs[id].arr)
			unfinished++
		}
	}
	if len(lats) > 0 {
		sort.Float64s(lats)
		res.PLat = lats[min(len(lats)-1, int(math.Ceil(o.Percentile*float64(len(lats))))-1)]
	}
	if finished > 0 {
		res.Acc = float64(right) / float64(finished)
	}
	slack := max(g.B1, 1) + int(q*0.1) + 8
	// Sustained: the backlog does not grow across the horizon and nearly every measured
	// request finished (a trigger the rate never fills is not sustained). Utilization is
	// reported, not tested: a trigger-1 queue keeps its GPU busy with growing batches.
	res.Sustained = res.Backlog <= backlogMid+slack && float64(unfinished) <= 0.05*float64(max(measured, 1))
	if !res.Sustained {
		// Bottleneck: first stage (cascade order) with a growing queue or a saturated GPU.
		for i := 0; i < k && res.Bottleneck < 0; i++ {
			for _, ri := range stageReps[i] {
				sat := qlen(ri) > slack || qlen(ri) >= trigger(ri) && trigger(ri) > 1
				if sat {
					res.Bottleneck = i
					break
				}
			}
		}
		if res.Bottleneck < 0 {
			res.Bottleneck = 0
		}
	}
	return res
}

func sameGPU(a, b []int) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}
