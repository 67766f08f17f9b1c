package serve

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve/kserve"
)

func (s *Server) handleGetPlan(w http.ResponseWriter, _ *http.Request) {
	g := s.active.Load()
	b, err := formats.Marshal(g.plan)
	if err != nil {
		writeJSON(w, 500, kserve.ErrorResponse{Error: err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Plan-Digest", g.digest)
	// prepare filled in the system's default policy when none was asked for; a deployment's
	// own system names it otherwise (no system's name is assumed).
	pol := g.polCfg.Policy
	if pol == "" {
		pol = g.dep.Kind
	}
	w.Header().Set("X-Plan-Policy", pol)
	_, _ = w.Write(b)
}

// maxPlanBytes bounds PUT /v1/plan (plans embed their profiles, so they can be large).
const maxPlanBytes = 64 << 20

func (s *Server) handlePutPlan(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPlanBytes))
	if err != nil {
		writeJSON(w, 400, kserve.ErrorResponse{Error: "reading the plan: " + err.Error()})
		return
	}
	if s.opts.Sections == nil {
		// Only the registry's sections read a plan with its system's rules (DESIGN.md
		// "Systems as plug-ins"); a server started without them takes no plan rather than
		// one read by other rules. The server's configuration, not the request, is at fault.
		writeJSON(w, 500, kserve.ErrorResponse{Error: "this server was started without the registered systems' sections (serve.Options.Sections): it cannot read a plan"})
		return
	}
	p, err := formats.DecodeInto[*formats.Plan]("plan", body, s.opts.Sections)
	if err != nil {
		writeJSON(w, 400, kserve.ErrorResponse{Error: err.Error()})
		return
	}
	if err := s.Reload(r.Context(), p); err != nil {
		code := 400
		switch {
		case errors.Is(err, ErrReloadBusy):
			code = 409
		case s.closing.Load():
			code = 503
		}
		writeJSON(w, code, kserve.ErrorResponse{Error: err.Error()})
		return
	}
	g := s.active.Load()
	writeJSON(w, 200, map[string]string{"status": "switched", "digest": g.digest})
}

// errUnknownWorker marks SetWorkerDown's unknown-name error (404 at /v1/workers/state).
var errUnknownWorker = errors.New("unknown worker")

// WorkerState is the body of POST /v1/workers/state: an operator (or a health checker) takes
// a failed GPU's worker out of service, or puts it back.
type WorkerState struct {
	Worker string `json:"worker"`
	Down   *bool  `json:"down"`
}

func (s *Server) handleWorkerState(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, workerStateBytes))
	if err != nil {
		writeJSON(w, 400, kserve.ErrorResponse{Error: "reading the body: " + err.Error()})
		return
	}
	var ws WorkerState
	if err := formats.StrictUnmarshal(body, &ws); err != nil {
		writeJSON(w, 400, kserve.ErrorResponse{Error: "worker state: " + err.Error()})
		return
	}
	switch {
	case ws.Worker == "":
		writeJSON(w, 400, kserve.ErrorResponse{Error: `worker state: field "worker" is required: the name of a worker of the served plan`})
		return
	case ws.Down == nil:
		writeJSON(w, 400, kserve.ErrorResponse{Error: `worker state: field "down" is required (true: failed, false: back)`})
		return
	}
	if err := s.SetWorkerDown(ws.Worker, *ws.Down); err != nil {
		code := 503
		switch {
		case errors.Is(err, errUnknownWorker):
			code = 404
		case errors.Is(err, dataplane.ErrNoFailover):
			code = 409
		}
		writeJSON(w, code, kserve.ErrorResponse{Error: err.Error()})
		return
	}
	writeJSON(w, 200, map[string]any{"worker": ws.Worker, "down": *ws.Down})
}

// SetWorkerDown reports that the worker named name failed (down) or is back (!down): the
// engine loses the batches it held and the policy re-routes or drops their requests
// (dataplane.EvWorkerDown). Front ends that watch remote engines call it (serve/openai marks
// an instance down after consecutive failed polls). It fails for an unknown worker, for a
// policy that does not handle failures (dataplane.ErrNoFailover), and when the driver stopped.
func (s *Server) SetWorkerDown(name string, down bool) error {
	var err error
	ran := s.d.do(func() {
		g := s.d.gen
		w := -1
		var names []string
		for i, wk := range g.dep.Topo.Workers {
			if wk.Name == name {
				w = i
			}
			if len(names) < 8 {
				names = append(names, wk.Name)
			}
		}
		if w < 0 {
			if len(g.dep.Topo.Workers) > len(names) {
				names = append(names, fmt.Sprintf("… (%d workers)", len(g.dep.Topo.Workers)))
			}
			err = fmt.Errorf("%w %s: not in the plan; workers are %s", errUnknownWorker, formats.Echo(name), strings.Join(names, ", "))
			return
		}
		if down && !dataplane.HandlesFailures(g.eng.Policy()) {
			err = fmt.Errorf("worker %s: %w (%s)", name, dataplane.ErrNoFailover, g.eng.Policy().Name())
			return
		}
		kind := dataplane.EvWorkerUp
		if down {
			kind = dataplane.EvWorkerDown
		}
		s.d.handle(dataplane.Event{Kind: kind, Worker: dataplane.WorkerID(w), Req: dataplane.NoReq})
		// Readiness is false while no worker is up: nothing could serve a request.
		v, all := s.d.gen.eng.View(), true
		for i := range s.d.gen.dep.Topo.Workers {
			all = all && v.WorkerDown(dataplane.WorkerID(i))
		}
		s.noWorker.Store(all)
	})
	if !ran {
		return errors.New("the server has stopped")
	}
	return err
}
