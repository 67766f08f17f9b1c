// Package workload is `plan workload from-trace`'s work: it reads a trace and writes the
// workload file the trace describes (rates, token-length mix, suggested SLOs), which
// `plan solve` takes as is.
package workload

import (
	"context"
	"fmt"
	"strconv"
	"time"

	dpworkload "github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
)

// Args are `plan workload from-trace`'s inputs.
type Args struct {
	// Trace is the trace file (a Trace document or an Azure LLM inference CSV).
	Trace string
	// Profile is the LLM profile to suggest SLOs from (--profile; default none).
	Profile string
	// Model is the model of requests whose trace entry names none (--model).
	Model string
	// Rate is the rate_rps written: "peak" (the default) or "mean" (--rate).
	Rate string
	// Window is the window the peak rate is measured over (--window; default 1m).
	Window time.Duration
	// SLO is every LLM class's end-to-end SLO (--slo; default 0: suggested from Profile).
	SLO time.Duration
	// SLOScale: a suggested SLO is this × the class's p99 request's unloaded latency
	// (--slo-scale; default 5).
	SLOScale float64
	// Name is the workload's metadata.name (--name; default from-trace).
	Name string
	// Out is where to write (-o; default "": standard output, JSON).
	Out string
	// Systems is the system registry the files are read with.
	Systems *systems.Registry
}

// Run builds the workload of a.Trace and writes it to a.Out (or stdout), a summary line per
// class on stderr.
func Run(_ context.Context, a Args, io *run.IO) error {
	if a.Window <= 0 {
		return run.UsageErrorf("--window: %s: must be > 0", a.Window)
	}
	if a.SLO < 0 {
		return run.UsageErrorf("--slo: %s: must be >= 0", a.SLO)
	}
	if !(a.SLOScale > 0) {
		return run.UsageErrorf("--slo-scale: %g: must be > 0", a.SLOScale)
	}
	if a.Out != "" {
		if err := formats.CheckWritable(a.Out); err != nil {
			return run.UsageErrorf("--out: %q: %v", a.Out, err)
		}
	}
	path := a.Trace
	tr, err := dpworkload.ReadTraceDoc(path)
	if err != nil {
		return run.UsageError(err)
	}
	opt := dpworkload.FromTraceOptions{Name: a.Name, Model: a.Model, Window: a.Window, Basis: a.Rate, SLO: a.SLO, SLOScale: a.SLOScale}
	if a.Profile != "" {
		p, err := formats.ReadInto[*formats.Profile](a.Profile, a.Systems.Sections())
		if err != nil {
			return run.UsageError(err)
		}
		opt.Profiles = p.LLMs
	}
	w, sums, err := dpworkload.FromTrace(path, tr, opt)
	if err != nil {
		return run.UsageError(err)
	}
	if errs := formats.Validate(w, a.Systems.Sections()); len(errs) > 0 {
		return run.UsageErrorf("%s: the workload built from it does not validate: %v", path, errs)
	}
	out, err := formats.Marshal(w)
	if err != nil {
		return err
	}
	for _, s := range sums {
		line := fmt.Sprintf("%s (%s): %d requests, mean %s req/s, peak %s req/s (%v window)", s.Name, s.Model, s.Requests, sig3(s.MeanRPS), sig3(s.PeakRPS), a.Window)
		if s.InP50 > 0 {
			line += fmt.Sprintf("; input p50/p90/p99 %d/%d/%d, output %d/%d/%d tokens", s.InP50, s.InP90, s.InP99, s.OutP50, s.OutP90, s.OutP99)
		}
		if s.PrefixTokens > 0 {
			line += fmt.Sprintf("; prefix_tokens %d (cached per request, were every block kept)", s.PrefixTokens)
		}
		if s.SLOFrom != "" {
			line += "; SLO from " + s.SLOFrom
		}
		io.Infof("%s", line)
	}
	if a.Out == "" {
		_, err = io.Out.Write(out)
		return err
	}
	if err := formats.WriteAtomic(a.Out, out); err != nil {
		return err
	}
	io.Infof("wrote %s", a.Out)
	return nil
}

// sig3 is x to three significant figures, whole above 1000 (1000 req/s, not 1e+03).
func sig3(x float64) string {
	if x >= 1000 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}
