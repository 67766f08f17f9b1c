package load

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// FloorHandler is the HTTP floor `plan serve` is measured against (serve/load/floor and
// `plan bench speed`): a trivial net/http handler that speaks just enough of plan serve's
// API for the load generator to drive it — GET /v1/plan (the plan file's bytes raw) and GET
// /v2/models/{model} from the plan, and an infer endpoint that reads the body, waits the
// plan's single-request latency of the model (time.Sleep) and answers a fixed 200. No
// decoding, no engine, no batching, no admission, unbounded concurrency: what any Go HTTP
// server costs on the same machine. name names the file in errors; secs are the sections
// the plan is read with (the system registry's, or the PPipe sections alone for a tool that
// mimics PPipe plans only).
func FloorHandler(name string, raw []byte, secs *formats.SectionSet) (http.Handler, error) {
	p, err := formats.DecodeInto[*formats.Plan](name, raw, secs)
	if err != nil {
		return nil, err
	}
	if ppipesec.PlanOf(p) == nil {
		return nil, fmt.Errorf("floor: %s: the plan has no ppipe section", name)
	}
	type model struct {
		meta []byte
		work time.Duration
	}
	models := map[string]*model{}
	for _, m := range ppipesec.PlanOf(p).Models {
		// The fastest pipeline's latency for one request: the least any server must wait.
		var work time.Duration
		for i, pl := range m.Pipelines {
			var w time.Duration
			for _, part := range pl.Partitions {
				w += time.Duration(part.StageLatencyUs * float64(time.Microsecond))
			}
			if i == 0 || w < work {
				work = w
			}
		}
		slo := time.Duration(m.SLO)
		meta, _ := json.Marshal(map[string]any{"name": m.Model, "platform": "floor", "slo_us": slo.Microseconds(),
			"rate_rps": m.ThroughputRPS,
			"inputs":   []map[string]any{{"name": "input", "datatype": "FP32", "shape": []int64{-1, -1}}},
			"outputs":  []map[string]any{{"name": "output", "datatype": "FP32", "shape": []int64{-1, -1}}}})
		models[m.Model] = &model{meta: meta, work: work}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/plan", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
	})
	mux.HandleFunc("GET /v2/models/{model}", func(w http.ResponseWriter, r *http.Request) {
		m := models[r.PathValue("model")]
		if m == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(m.meta)
	})
	mux.HandleFunc("POST /v2/models/{model}/infer", func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		m := models[r.PathValue("model")]
		if m == nil {
			http.NotFound(w, r)
			return
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		time.Sleep(m.work)
		b := fmt.Appendf(nil, `{"model_name":%q,"outputs":[{"name":"output","shape":[1,4],"datatype":"FP32","data":[0,1,2,3]}],"outcome":"completed","timing":{"latency_us":%d}}`,
			r.PathValue("model"), time.Since(start).Microseconds())
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b)
	})
	return mux, nil
}
