package simulate

// An LLM (QLM) plan's sweep: its classes, the exact replay of a per-request trace, the
// token CDFs of the report directory, and the per-request log (--requests-out).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"

	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/sim"
)

// llmReplay builds the exact replay of a per-request trace on an LLM plan:
// each request once, its class and tokens as given. A request of a class no instance of the
// plan serves is bad input naming the trace, the request and the class.
func llmReplay(planPath string, p *formats.Plan, dep *dataplane.Deployment, classes []sim.LLMClass, traceArg string, t *formats.Trace) (*sim.ExactReplay, error) {
	x, err := sim.NewExactReplay(traceArg, t, dep, classes)
	if err != nil {
		return nil, run.UsageError(err)
	}
	_, llms, said := p.ServedModels()
	if !said {
		return x, nil // the plan's section names no models: the run reports what it serves
	}
	served := map[string]bool{}
	for _, m := range llms {
		served[m] = true
	}
	for a := range dep.Apps {
		if row := x.Row(dataplane.AppID(a), 0); row >= 0 && !served[classes[a].Model] {
			return nil, run.UsageErrorf("%s: requests[%d]: class %q: its model %q is served by no instance of %s (%s)",
				traceArg, row, dep.Apps[a].Name, classes[a].Model, planPath, strings.Join(p.SectionKeys(), ", "))
		}
	}
	return x, nil
}

// setupLLMSweep gives an LLM plan's sweep its classes and, for a per-request trace, the
// exact replay: by default at load 1 only (the trace as recorded), over the trace's span,
// with no warm-up, so a trace of n requests is n requests.
func setupLLMSweep(a *Args, p *formats.Plan, cfg *sim.SweepConfig, spec sim.ArrivalSpec) error {
	planPath := a.Plan
	cfg.LLM = sim.PlanLLMClasses(p, cfg.Dep)
	if cfg.LLM == nil || spec.Trace == nil || len(spec.Trace.Requests) == 0 {
		return nil
	}
	if a.Reference != "" {
		return run.UsageErrorf("--reference-plan: not with an exact trace replay (%s): load 1 is the trace as recorded", a.Trace)
	}
	x, err := llmReplay(planPath, p, cfg.Dep, cfg.LLM, a.Trace, spec.Trace)
	if err != nil {
		return err
	}
	cfg.Replay = x
	cfg.BaseRPS = x.NativeRPS()
	if !a.LoadSet {
		cfg.Loads = []float64{1}
		cfg.FindLimit = a.FindLimitSet && a.FindLimit
	}
	if !a.DurationSet {
		// The whole trace at the lowest load (each point's window is its own span, ≥ 1 s).
		cfg.Duration = max(dataplane.Time(float64(x.Span())/cfg.Loads[0])+1, dataplane.Second)
	}
	if !a.WarmupSet {
		cfg.Warmup = 0
	}
	return nil
}

// writeTokenCDFs draws, for an LLM plan, the CDFs of TTFT and TPOT per class at load (a
// re-run of that point keeping its requests: runs are deterministic) as DIR/ttft_cdf and
// DIR/tpot_cdf (PNG and SVG), and returns the files written.
func writeTokenCDFs(cfg *sim.SweepConfig, rep *sim.Report, dir string, load float64) ([]string, error) {
	if cfg.LLM == nil {
		return nil, nil
	}
	c := *cfg
	c.RecordRequests, c.Progress = true, nil
	p, err := sim.RunPoint(&c, load)
	if err != nil {
		return nil, err
	}
	ts := sim.TokenSamplesOf(p.Requests)
	var files []string
	for _, f := range []struct {
		base, what string
		samples    map[string][]float64
		slos       []sim.SLOMark
	}{{"ttft_cdf", "time to first token (ms)", ts.TTFT, sim.SLOMarks(cfg.Dep, cfg.LLM, true)}, {"tpot_cdf", "time per output token (ms)", ts.TPOT, sim.SLOMarks(cfg.Dep, cfg.LLM, false)}} {
		pl, err := sim.CDFPlotColored(fmt.Sprintf("%s at load %.2f: %s", rep.Plan, load, f.what), f.what, ts.Classes, f.samples, f.slos, sim.AppColors(cfg.Dep))
		if err != nil {
			return nil, err
		}
		out, err := sim.SavePlot(pl, dir, f.base, 16*vg.Centimeter, 10*vg.Centimeter)
		if err != nil {
			return nil, err
		}
		files = append(files, out...)
	}
	return files, nil
}

// CheckRequestsOut refuses an unusable --requests-out before anything runs: a path that
// exists must be a regular file (the write replaces it: never a directory, a device such as
// /dev/null, a pipe or a socket).
func CheckRequestsOut(path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return run.UsageErrorf("--requests-out: %s: is a directory", path)
	} else if err == nil && !st.Mode().IsRegular() {
		return run.UsageErrorf("--requests-out: %s: exists and is not a regular file (%s)", path, st.Mode().Type())
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return run.UsageErrorf("--requests-out: %s: its directory does not exist", path)
	}
	return nil
}

// writeRequestsOut writes every request of every load point as JSONL, by load then ID (path
// "": nothing).
func writeRequestsOut(path string, rep *sim.Report) error {
	if path == "" {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, p := range rep.Points {
		for i := range p.Requests {
			if err := enc.Encode(&p.Requests[i]); err != nil {
				return err
			}
		}
	}
	return formats.WriteAtomic(path, buf.Bytes())
}
