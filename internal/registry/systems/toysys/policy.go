package toysys

import (
	"slices"

	"github.com/plan-dev/plan/dataplane"
)

// fifo dispatches the oldest queued job to an idle worker, one job per batch.
type fifo struct {
	v     dataplane.View
	queue []dataplane.ReqID
	busy  []bool
}

func newFIFO(cfg dataplane.Config) (dataplane.Policy, error) {
	if err := cfg.CheckKnown(Policy); err != nil {
		return nil, err
	}
	return &fifo{}, nil
}

func (f *fifo) Name() string { return Policy }

func (f *fifo) Attach(v dataplane.View) error {
	f.v = v
	f.busy = make([]bool, len(v.Deployment().Topo.Workers))
	return nil
}

func (f *fifo) Handle(_ dataplane.Time, ev *dataplane.Event, out *dataplane.Decisions) {
	switch ev.Kind {
	case dataplane.EvArrival:
		f.queue = append(f.queue, ev.Req)
	case dataplane.EvBatchDone:
		f.busy[ev.Worker] = false
	case dataplane.EvCancel:
		if i := slices.Index(f.queue, ev.Req); i >= 0 {
			f.queue = slices.Delete(f.queue, i, i+1)
		}
	}
	st := &f.v.Deployment().Stages[0]
	for _, w := range st.Pool {
		for !f.busy[w] && len(f.queue) > 0 {
			id := f.queue[0]
			f.queue = f.queue[1:]
			if f.v.Req(id).Outcome != dataplane.Pending {
				continue
			}
			out.Dispatch(0, []dataplane.ReqID{id}, []dataplane.PathHop{{Stage: 0, Worker: w}})
			f.busy[w] = true
		}
	}
}
