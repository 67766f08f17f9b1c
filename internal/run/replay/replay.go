// Package replay is `plan simulate --llm`: one LLM engine built from a profile alone (its
// model on its GPU count, its engine settings) replaying a trace once as recorded, with no
// cluster, workload or plan, and the token timings users measure (TTFT, TPOT, E2E),
// throughput and preemptions (LLM engine digest §5: fidelity is judged by replaying a real
// deployment's requests through one instance with its engine settings and profile). The
// cobra command in cmd/plan only fills Args and calls Run.
package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/dataplane"
	dllm "github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	progressline "github.com/plan-dev/plan/internal/base/progress"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/simulate"
	"github.com/plan-dev/plan/sim"
)

// Args are a one-engine replay's inputs, one field per flag it reads.
type Args struct {
	// Systems is the system registry: its LLM engine (Registry.Engine) builds the instance,
	// its policies schedule it.
	Systems *systems.Registry
	// PlanArgs are the command's positional arguments: a replay takes none (no PLAN).
	PlanArgs []string
	// FlagsSet names the command's own flags given on the command line, in the order they
	// are checked: any one not in the replay's flags (--llm, --profile, --model, --trace,
	// --policy, --param, --seed, --jitter, --cancel, --duration, --requests-out) is refused.
	FlagsSet []string
	// Profile is --profile, the LLM profile of the engine (required).
	Profile string
	// Model is --model: the profile's LLM entry, MODEL, MODEL@GPU or MODEL@NxGPU ("" = its
	// only one).
	Model string
	// Trace is --trace, the trace file replayed (required: TraceSet must be true).
	Trace string
	// TraceSet says --trace was given.
	TraceSet bool
	// Policy is --policy ("" = the engine's own scheduling, the system's engine policy).
	Policy string
	// Params are --param KEY=VALUE (default none).
	Params []string
	// Seed is --seed (default 1).
	Seed uint64
	// Jitter is --jitter, relative execution-time jitter in [0, 1) (default 0).
	Jitter float64
	// Cancel is --cancel, the share of requests withdrawn by their clients (default 0).
	Cancel float64
	// Duration is --duration; it cuts the replay only when DurationSet (default: the
	// trace's whole span).
	Duration time.Duration
	// DurationSet says --duration was given.
	DurationSet bool
	// RequestsOut is --requests-out, a JSONL file of every request's Record ("" = none).
	RequestsOut string
}

// engineFlags are the flags a one-engine replay reads; any other simulate flag belongs to a
// plan's load sweep and is refused with --llm.
var engineFlags = []string{"llm", "profile", "model", "trace", "policy", "param", "seed", "jitter", "cancel", "duration", "requests-out"}

// check refuses with --llm a PLAN or any flag of a plan's sweep, and a replay without its
// profile or trace.
func check(a *Args) error {
	if len(a.PlanArgs) > 0 {
		return run.UsageErrorf("--llm: replays one engine built from --profile: no PLAN (got %s)", a.PlanArgs[0])
	}
	for _, f := range a.FlagsSet {
		if !slices.Contains(engineFlags, f) {
			return run.UsageErrorf("--%s: not with --llm: one engine replays its trace once, as recorded (flags it reads: --%s)", f, strings.Join(engineFlags[1:], ", --"))
		}
	}
	if a.Profile == "" {
		return run.UsageErrorf("--llm: needs --profile FILE (the engine's LLM profile)")
	}
	if !a.TraceSet {
		return run.UsageErrorf("--llm: needs --trace FILE (a Trace document or an Azure LLM trace CSV with each request's tokens)")
	}
	// The sweep's numeric rules; its other flags are refused above, so at their defaults.
	return simulate.CheckFlags(&simulate.Args{Duration: a.Duration, Cancel: a.Cancel, Jitter: a.Jitter})
}

// engine is the registry's LLM engine run on its own (systems.Registry.Engine): the replay
// reaches the engine directly, through no system's entry.
func engine(reg *systems.Registry) (*system.Engine, error) {
	if e := reg.Engine(); e != nil {
		return e, nil
	}
	return nil, run.UsageErrorf("--llm: this build replays no LLM engine (its systems register none of the engine's policies)")
}

// pickLLM is the profile's LLM entry to replay: the only one, or the one --model names
// (MODEL, MODEL@GPU or MODEL@NxGPU). Ambiguity is bad input naming the file and the entries.
func pickLLM(path string, p *formats.Profile, model string) (int, error) {
	label := func(l *formats.LLMProfile) string { return fmt.Sprintf("%s@%dx%s", l.Model, max(l.GPUCount, 1), l.GPU) }
	var all, hits []string
	var idx []int
	for i := range p.LLMs {
		l := &p.LLMs[i]
		all = append(all, label(l))
		name, where, scoped := strings.Cut(model, "@")
		ok := model == "" || l.Model == name
		if scoped {
			n, gpu, counted := strings.Cut(where, "x")
			if c, err := strconv.Atoi(n); counted && err == nil {
				ok = ok && c == max(l.GPUCount, 1) && strings.EqualFold(gpu, l.GPU)
			} else {
				ok = ok && strings.EqualFold(where, l.GPU)
			}
		}
		if ok {
			hits, idx = append(hits, label(l)), append(idx, i)
		}
	}
	switch {
	case len(p.LLMs) == 0:
		return 0, run.UsageErrorf("%s: llms: holds no LLM profile to replay", path)
	case len(idx) == 1:
		return idx[0], nil
	case len(idx) == 0:
		return 0, run.UsageErrorf("--model %s: %s holds no such LLM (it holds %s)", model, path, strings.Join(all, ", "))
	case model == "":
		return 0, run.UsageErrorf("%s: holds %d LLMs (%s): pick one with --model", path, len(idx), strings.Join(hits, ", "))
	}
	return 0, run.UsageErrorf("--model %s: %s holds %d such LLMs (%s): name one as MODEL@GPU or MODEL@NxGPU", model, path, len(idx), strings.Join(hits, ", "))
}

// PickLLM is pickLLM for the other commands that run one engine of a profile file (`plan
// profile --calibrate --profile FILE --model M`): the same rule, the same errors.
func PickLLM(path string, p *formats.Profile, model string) (int, error) {
	return pickLLM(path, p, model)
}

// replayClasses turns the trace into the one engine's classes: every request replays on it
// (a target, where given, must name its model), each under its class label (the model's name
// where it has none), with its own tokens. The copy returned names each request's class, so
// the replay assigns it exactly (workload.AssignTrace). The classes' token maxima are the
// trace's: the engine, not the class, refuses what it cannot hold (max_model_len, KV).
func replayClasses(name string, t *formats.Trace, model string) (*formats.Trace, []llmspec.LLMClass, error) {
	if len(t.Requests) == 0 {
		return nil, nil, run.UsageErrorf("%s: requests: a one-engine replay needs per-request arrivals (the trace has none)", name)
	}
	cp := *t
	cp.Requests = slices.Clone(t.Requests)
	var classes []llmspec.LLMClass
	byName := map[string]int{}
	sumIn, sumOut := map[int]float64{}, map[int]float64{}
	for i := range cp.Requests {
		r := &cp.Requests[i]
		at := fmt.Sprintf("%s: requests[%d]", name, i)
		if r.Target != "" && r.Target != model {
			return nil, nil, run.UsageErrorf("%s.target: %q: the engine replayed serves %s", at, r.Target, model)
		}
		if r.InputTokens < 1 {
			return nil, nil, run.UsageErrorf("%s.input_tokens: %d: a one-engine replay needs each request's prompt tokens (>= 1)", at, r.InputTokens)
		}
		if r.OutputTokens < 1 {
			return nil, nil, run.UsageErrorf("%s.output_tokens: %d: a one-engine replay needs each request's output tokens (>= 1)", at, r.OutputTokens)
		}
		label := r.Class
		if label == "" {
			label = model
		}
		c, ok := byName[label]
		if !ok {
			c = len(classes)
			byName[label] = c
			classes = append(classes, llmspec.LLMClass{Name: label, Model: model, SLO: formats.Duration(replaySLO)})
		}
		cl := &classes[c]
		cl.RateRPS++ // a count here; a rate below
		cl.InputTokens.Max = max(cl.InputTokens.Max, r.InputTokens)
		cl.OutputTokens.Max = max(cl.OutputTokens.Max, r.OutputTokens)
		sumIn[c] += float64(r.InputTokens)
		sumOut[c] += float64(r.OutputTokens)
		r.Class, r.Target = label, ""
	}
	span := max(float64(cp.Requests[len(cp.Requests)-1].TimeUs)/1e6, 1)
	for c := range classes {
		n := classes[c].RateRPS
		classes[c].InputTokens.Mean, classes[c].OutputTokens.Mean = sumIn[c]/n, sumOut[c]/n
		classes[c].RateRPS = n / span
	}
	return &cp, classes, nil
}

// replaySLO is every replayed class's SLO: a replay measures token timings, not attainment,
// and the engine's own scheduling ignores deadlines; a day keeps every request on time.
const replaySLO = 24 * time.Hour

// preempter is a policy that counts its preemptions (QLM's policies: serve.Preempter).
type preempter interface{ Preemptions() int64 }

// prefixCacher is a policy that counts its engines' prefix-cache queries and hits (QLM's
// policies: serve.PrefixCacher).
type prefixCacher interface{ PrefixCache() (queries, hits int64) }

// capturePolicies is a registry of the one policy name that keeps the instance it builds,
// so the replay can read its counters after the run.
func capturePolicies(reg *dataplane.Registry, name string, got *dataplane.Policy) (*dataplane.Registry, error) {
	spec, ok := reg.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q", dataplane.ErrUnknownPolicy, name)
	}
	inner := spec.New
	spec.New = func(cfg dataplane.Config) (dataplane.Policy, error) {
		p, err := inner(cfg)
		*got = p
		return p, err
	}
	return dataplane.NewRegistry(spec), nil
}

// Run is `plan simulate --llm --profile F --trace T`: the deployment of one instance of
// the profile's LLM, the trace replayed through it once as recorded, and the token timings
// users measure (LLM engine digest §3).
func Run(ctx context.Context, a Args, io *run.IO) error {
	if err := check(&a); err != nil {
		return err
	}
	if err := simulate.CheckRequestsOut(a.RequestsOut); err != nil {
		return err
	}
	eng, err := engine(a.Systems)
	if err != nil {
		return err
	}
	data, err := formats.ReadBytes(a.Profile)
	if err != nil {
		return run.UsageError(err)
	}
	doc, err := formats.DecodeProfileFor(a.Profile, data, formats.UseReplay)
	if err != nil {
		return run.UsageError(err)
	}
	li, err := pickLLM(a.Profile, doc, a.Model)
	if err != nil {
		return err
	}
	prof := doc.LLMs[li]
	policy := a.Policy
	if policy == "" {
		policy = eng.Policy
	}
	if _, ok := a.Systems.Policies().Lookup(policy); !ok {
		return run.UsageErrorf("--policy: %v %q: must be one of %s", dataplane.ErrUnknownPolicy, policy, run.PolicyNames(a.Systems))
	}
	if !slices.Contains(eng.EngineOnly, policy) {
		// A planner's policy reads the planner's fields of the profile too.
		if errs := plannerFieldProblems(doc, li); len(errs) > 0 {
			return run.UsageErrorf("--policy %s reads the planner's fields of the profile (%s read only the engine's): %v", policy, strings.Join(eng.EngineOnly, ", "), errs.WithFile(a.Profile))
		}
	}
	spec, err := sim.ParseTraceFlag(a.Trace)
	if err != nil {
		return run.UsageError(err)
	}
	if spec.Trace == nil {
		return run.UsageErrorf("--trace %s: --llm replays a trace file (a Trace document or an Azure LLM trace CSV)", a.Trace)
	}
	trace, classes, err := replayClasses(spec.Name, spec.Trace, prof.Model)
	if err != nil {
		return err
	}
	dep, err := eng.Deploy(prof, classes)
	if err != nil {
		return run.UsageErrorf("%s: %s: %v", a.Profile, prof.Model, err)
	}
	params, err := run.ParseParams(a.Params)
	if err != nil {
		return err
	}
	pcfg := dataplane.Config{Policy: policy, Params: params}
	pol, err := a.Systems.Policies().New(dep, pcfg, "")
	if err != nil {
		return run.UsageErrorf("--policy: %v", err)
	}
	if _, err := dataplane.NewEngine(dep, pol, simulate.DiscardEffects{}); err != nil {
		return run.UsageErrorf("--policy %s: %s: %v", policy, a.Profile, err)
	}
	var ran dataplane.Policy
	reg, err := capturePolicies(a.Systems.Policies(), policy, &ran)
	if err != nil {
		return run.UsageErrorf("--policy: %v", err)
	}
	llm := sim.LLMClassesOf(dep, classes)
	x, err := sim.NewExactReplay(spec.Name, trace, dep, llm)
	if err != nil {
		return run.UsageError(err)
	}
	cfg := &sim.SweepConfig{
		Dep: dep, Policies: reg, Policy: pcfg, Arrival: spec, BaseRPS: x.NativeRPS(), Loads: []float64{1},
		Seed: a.Seed, Jitter: a.Jitter, CancelFraction: a.Cancel, LLM: llm, Replay: x, RecordRequests: true,
		PlanName: a.Profile, Ctx: ctx, // SIGINT/SIGTERM stop the replay (sim.Options.Ctx)
	}
	if a.DurationSet {
		cfg.Duration = dataplane.Time(a.Duration / time.Microsecond)
		warnDurationCut(io, a.Duration, spec.Name, spec.Trace, cfg.Duration)
	}
	// One replay, no counted steps: a status line at once on a terminal, one summary line
	// piped, nothing with --quiet (internal/base/progress).
	task := progressline.NewStatus(io.Err, io.Quiet, "simulate --llm")
	task.Note("replaying " + spec.Name)
	pt, err := sim.RunPoint(cfg, 1)
	if err != nil {
		task.Clear()
		return err
	}
	task.Finish(fmt.Sprintf("%d requests replayed", len(pt.Requests)))
	rep := sim.NewEngineReport(a.Profile, prof, policy, policy == eng.Policy, spec.Name, pt)
	if p, ok := ran.(preempter); ok {
		n := p.Preemptions()
		rep.Preemptions = &n
	}
	if p, ok := ran.(prefixCacher); ok && prof.Engine.PrefixCaching() {
		q, h := p.PrefixCache()
		rep.PrefixCache = &sim.EnginePrefixCache{QueriedTokens: q, CachedTokens: h}
		if q > 0 {
			rep.PrefixCache.HitRate = math.Round(float64(h)/float64(q)*1e6) / 1e6
		}
	}
	if s, ok := ran.(dllm.StatsReporter); ok && prof.Engine != nil && prof.Engine.KVOffloadBytes > 0 {
		st := s.EngineStats()
		rep.KVOffload = &sim.EngineKVOffload{Bytes: prof.Engine.KVOffloadBytes, QueriedTokens: st.OffloadQueries, LoadedTokens: st.OffloadHits}
		if st.OffloadQueries > 0 {
			rep.KVOffload.HitRate = math.Round(float64(st.OffloadHits)/float64(st.OffloadQueries)*1e6) / 1e6
		}
	}
	if err := writeEngineRequests(a.RequestsOut, pt.Requests, traceRequestIDs(spec.Trace.Requests)); err != nil {
		return err
	}
	bands := expectedError(&prof, pt.Requests)
	if io.JSONOutput() {
		return io.WriteJSON(engineOutput{EngineReport: rep, ExpectedError: bands})
	}
	printEngineReport(io, rep)
	printBands(io.Out, bands)
	return nil
}

// Records replays trace t (named name, for errors) once, as recorded, through one engine of
// prof under the engine's own policy (the scheduling `plan simulate --llm` runs by
// default, vLLM's) and returns every request's record, ordered by request id; a record's
// TraceRow is its row in t. It is Run without the flags, the report or the files: what `plan
// profile --calibrate` replays a measured run through for each candidate correction of the
// profile (LLM engine digest §5: a replay of the real deployment's requests through one
// instance with its engine settings and profile).
func Records(reg *systems.Registry, prof formats.LLMProfile, name string, t *formats.Trace) ([]sim.RequestRecord, error) {
	eng, err := engine(reg)
	if err != nil {
		return nil, err
	}
	trace, classes, err := replayClasses(name, t, prof.Model)
	if err != nil {
		return nil, err
	}
	dep, err := eng.Deploy(prof, classes)
	if err != nil {
		return nil, run.UsageErrorf("%s: %v", prof.Model, err)
	}
	llm := sim.LLMClassesOf(dep, classes)
	x, err := sim.NewExactReplay(name, trace, dep, llm)
	if err != nil {
		return nil, run.UsageError(err)
	}
	cfg := &sim.SweepConfig{
		Dep: dep, Policies: reg.Policies(), Policy: dataplane.Config{Policy: eng.Policy}, BaseRPS: x.NativeRPS(),
		Loads: []float64{1}, Seed: 1, LLM: llm, Replay: x, RecordRequests: true, PlanName: name,
	}
	pt, err := sim.RunPoint(cfg, 1)
	if err != nil {
		return nil, err
	}
	return pt.Requests, nil
}

// plannerFieldProblems are the problems of LLM entry li for planning (formats.UsePlan): the
// planner-only fields the replay let it leave out.
func plannerFieldProblems(doc *formats.Profile, li int) formats.ErrorList {
	prefix := fmt.Sprintf("llms[%d].", li)
	var out formats.ErrorList
	for _, e := range doc.ValidateFor(formats.UsePlan) {
		if strings.HasPrefix(e.Path, prefix) {
			out = append(out, e)
		}
	}
	return out
}

// warnDurationCut says on stderr what an explicit --duration leaves out of the replay (a
// replay's window is otherwise its trace's: no warning then).
func warnDurationCut(io *run.IO, d time.Duration, name string, t *formats.Trace, window dataplane.Time) {
	cut := 0
	for _, r := range t.Requests {
		if r.TimeUs >= int64(window) {
			cut++
		}
	}
	if cut > 0 {
		fmt.Fprintf(io.Err, "simulate: --duration %s cuts the trace %s: %d of its %d requests are not replayed; leave --duration unset to replay it whole\n",
			d, name, cut, len(t.Requests))
	}
}

// traceRequestIDs are the trace's request ids (formats.TraceRequest.ID), "" where a request
// has none, nil when none has one: what lets a replay be compared request by request with a
// real engine's log.
func traceRequestIDs(reqs []formats.TraceRequest) []string {
	ids := make([]string, len(reqs))
	any := false
	for i, r := range reqs {
		ids[i] = r.ID
		any = any || r.ID != ""
	}
	if !any {
		return nil
	}
	return ids
}

// Record is one line of a replay's --requests-out: the request's record, and the trace's
// id of the request where it has one.
type Record struct {
	sim.RequestRecord
	RequestID string `json:"request_id,omitempty"`
}

// writeEngineRequests writes the replay's requests as JSONL (path "": nothing), each with
// its trace id (ids, by trace row; nil: none).
func writeEngineRequests(path string, recs []sim.RequestRecord, ids []string) error {
	if path == "" {
		return nil
	}
	out := make([]Record, len(recs))
	for i, r := range recs {
		out[i].RequestRecord = r
		if r.TraceRow != nil && *r.TraceRow < len(ids) {
			out[i].RequestID = ids[*r.TraceRow]
		}
	}
	if err := writeJSONL(path, out); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return run.UsageErrorf("--requests-out: %v", err)
		}
		return err
	}
	return nil
}
