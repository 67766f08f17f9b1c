package profile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
	progressline "github.com/plan-dev/plan/internal/base/progress"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/replay"
	"github.com/plan-dev/plan/profiler"
	"github.com/plan-dev/plan/profiler/llm"
	"github.com/plan-dev/plan/profiler/llm/calibrate"
	"github.com/plan-dev/plan/profiler/roofline"
)

// checkCalibrateFlags refuses --profile and --model without --calibrate, and with it every
// flag of another mode of plan profile: a calibration corrects one LLM profile, named by
// --profile FILE [--model M] or estimated from --llm MODEL --gpu GPU [--tp N] [--link L].
func checkCalibrateFlags(a Args) error {
	if len(a.Calibrate) == 0 {
		if a.Profile != "" || a.ProfileModel != "" {
			return run.UsageErrorf("--profile and --model: only with --calibrate RESULT.json (the LLM profile to calibrate)")
		}
		if a.Strict {
			return run.UsageErrorf("--strict: only with --calibrate RESULT.json (it refuses a fit with warnings)")
		}
		return nil
	}
	for _, c := range []struct {
		flag string
		set  bool
	}{
		{"MODEL.onnx", a.Model != ""}, {"--zoo", a.Zoo != ""}, {"--import", a.Import != ""}, {"--explain", a.Explain},
		{"--backend", a.Backend != "" && a.Backend != "roofline"}, {"--device", a.DeviceSet}, {"--batch", a.Batch != ""},
		{"--vgpu", a.VGPU != ""}, {"--input-shape", a.InputShape != ""}, {"--trt-profile", a.TRTProfile != ""},
		{"--trt-layers", a.TRTLayers != ""}, {"--trt", a.TRT}, {"--gpu-count", a.GPUCountSet},
		{"--kv-capacity-tokens", a.KVCapacityTokensSet && a.Profile != ""}, {"--precision", a.Precision != ""},
	} {
		if c.set {
			return run.UsageErrorf("%s: not with --calibrate, which corrects one LLM profile (--profile FILE [--model M], or --llm MODEL --gpu GPU [--tp N])", c.flag)
		}
	}
	if a.KVCapacityTokensSet && (a.KVCapacityTokens < 1 || a.KVCapacityTokens > maxStatedKV) {
		return run.UsageErrorf("--kv-capacity-tokens: %d: must be in [1, %d]", a.KVCapacityTokens, int64(maxStatedKV))
	}
	switch {
	case a.Profile != "" && a.LLM != "":
		return run.UsageErrorf("--calibrate: give --profile FILE (an LLM profile) or --llm MODEL --gpu GPU (an analytic estimate), not both")
	case a.Profile != "" && (len(a.GPUs) > 0 || a.TPSet || a.LinkSet):
		return run.UsageErrorf("--gpu, --tp and --link: with --calibrate they say what to estimate (--llm MODEL); --profile FILE names its own")
	case a.Profile == "" && a.LLM == "":
		return run.UsageErrorf("--calibrate: needs the profile to calibrate: --profile FILE [--model M], or --llm MODEL --gpu GPU [--tp N]")
	case a.ProfileModel != "" && a.Profile == "":
		return run.UsageErrorf("--model: picks an entry of --profile FILE; with --llm the model is --llm's")
	case a.Out == "":
		return run.UsageErrorf("-o: must name an output file")
	}
	if isFile(a.LLM) {
		return run.UsageErrorf("--llm %s: with --calibrate name a profile file as --profile %s", a.LLM, a.LLM)
	}
	if a.Out != "-" {
		if err := formats.CheckWritable(a.Out); err != nil {
			return run.UsageErrorf("--out: %q: %v", a.Out, err)
		}
	}
	return nil
}

// calibrationBase is the profile document to calibrate and the index of its LLM entry:
// --profile FILE's (its entry --model names, or its only one), or the analytic estimate of
// --llm MODEL on --gpu GPU at --tp N. use is what the document validates for (an engine-only
// profile: replay).
func calibrationBase(a Args) (*formats.Profile, int, formats.ProfileUse, error) {
	if a.Profile != "" {
		data, err := formats.ReadBytes(a.Profile)
		if err != nil {
			return nil, 0, "", run.UsageErrorf("--profile: %v", err)
		}
		doc, err := formats.DecodeProfileFor(a.Profile, data, formats.UseReplay)
		if err != nil {
			return nil, 0, "", run.UsageError(err)
		}
		li, err := replay.PickLLM(a.Profile, doc, a.ProfileModel)
		if err != nil {
			return nil, 0, "", err
		}
		use := formats.UsePlan
		if len(doc.ValidateFor(formats.UsePlan)) > 0 {
			use = formats.UseReplay
		}
		return doc, li, use, nil
	}
	name := strings.ToLower(strings.TrimSpace(a.LLM))
	if strings.Contains(name, ",") || name == "all" {
		return nil, 0, "", run.UsageErrorf("--llm %s: --calibrate corrects one profile: name one model", a.LLM)
	}
	var gpus []string
	for _, g := range a.GPUs {
		if g = strings.TrimSpace(g); g != "" && !slices.Contains(gpus, g) {
			gpus = append(gpus, g)
		}
	}
	if len(gpus) > 1 {
		return nil, 0, "", run.UsageErrorf("--gpu: %s: --calibrate corrects one profile: name the one GPU type the run was served on", strings.Join(gpus, ","))
	}
	gpu := ""
	if len(gpus) == 1 {
		gpu = gpus[0]
	}
	if gpu == "" {
		return nil, 0, "", run.UsageErrorf("--llm %s: --calibrate needs --gpu GPU, the GPU type the run was served on", a.LLM)
	}
	tps, err := parseIntList(a.TP, 1, 8)
	if err != nil {
		return nil, 0, "", run.UsageErrorf("--tp: %q: %v", a.TP, err)
	}
	if len(tps) > 1 {
		return nil, 0, "", run.UsageErrorf("--tp: %q: --calibrate corrects one profile: give the run's one tensor-parallel degree", a.TP)
	}
	tp := 0
	if len(tps) == 1 {
		tp = tps[0]
	}
	link := roofline.LinkAuto
	switch l := strings.ToLower(strings.TrimSpace(a.Link)); l {
	case "", "auto":
	case "nvlink", "pcie":
		link = roofline.Link(l)
	default:
		return nil, 0, "", run.UsageErrorf("--link: %q: must be auto, nvlink or pcie", a.Link)
	}
	m, err := llm.Lookup(name)
	if err != nil {
		return nil, 0, "", run.UsageErrorf("--llm %s: %v", a.LLM, err)
	}
	// The server's own settings (--quantization, --kv-cache-dtype, --expert-parallel and
	// vLLM's flags): the estimate calibrated is the engine that ran, as the profile path
	// builds it.
	p, err := llm.EstimateWith(m, gpu, tp, llm.Variant{Link: link, KVCacheDtype: a.KVCacheDtype, Quantization: a.Quantization,
		ExpertParallel: a.ExpertParallel, Engine: a.Engine})
	if err != nil {
		return nil, 0, "", run.UsageErrorf("--llm %s --gpu %s: %v", a.LLM, gpu, err)
	}
	if a.KVCapacityTokensSet {
		// The server's logged KV capacity over the estimate.
		p.KVCapacityTokens = a.KVCapacityTokens
	}
	return profiler.NewProfile("llm", "LLM profile calibrated to a measured run", nil, []formats.LLMProfile{*p}), 0, formats.UsePlan, nil
}

// contextLimit is the most prompt + output tokens one request of p's engine may hold (vLLM's
// max_model_len, LLM engine digest §4) and where it comes from: the engine block's
// max_model_len, else the model's context (vLLM's default), else the KV capacity (the
// profile's rule for an engine whose model the analytic model does not know).
func contextLimit(p *formats.LLMProfile, file string) (int, string) {
	if p.Engine != nil && p.Engine.MaxModelLen > 0 {
		return p.Engine.MaxModelLen, "engine.max_model_len of " + file
	}
	if m, err := llm.Lookup(p.Model); err == nil && m.Context > 0 {
		return m.Context, p.Model + "'s context length"
	}
	if p.KVCapacityTokens > 0 && p.KVCapacityTokens <= math.MaxInt32 {
		return int(p.KVCapacityTokens), "kv_capacity_tokens of " + file
	}
	return 0, ""
}

// sameModel reports whether a run's model_id (vLLM's --model: a Hugging Face id or a path;
// "" when not given) may name p's model: its name, its hf_model, or the analytic model's
// Hugging Face id of it, or a model_id that holds the name.
func sameModel(id string, p *formats.LLMProfile) bool {
	if id == "" || strings.Contains(strings.ToLower(id), strings.ToLower(p.Model)) || strings.EqualFold(id, p.HFModel) {
		return true
	}
	m, err := llm.Lookup(p.Model)
	return err == nil && strings.EqualFold(id, m.HF)
}

// SimulatorContext is Simulator stopping at ctx's cancellation (SIGINT, SIGTERM): the fit
// replays the run dozens of times, and each replay first checks ctx, so an interrupted
// calibration ends within one replay.
func SimulatorContext(ctx context.Context, reg *systems.Registry, name string) calibrate.Simulator {
	sim := Simulator(reg, name)
	n := 0
	return func(p formats.LLMProfile, reqs []calibrate.Request) ([]calibrate.Timing, error) {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("--calibrate: interrupted after %d replays: %w", n, err)
		}
		n++
		return sim(p, reqs)
	}
}

// Simulator is calibrate's Simulator on the repository's engine: the requests, ordered by
// arrival, replayed as a trace once through one engine of the profile under the engine
// system's own policy (replay.Records, what `plan simulate --llm` runs).
func Simulator(reg *systems.Registry, name string) calibrate.Simulator {
	return func(p formats.LLMProfile, reqs []calibrate.Request) ([]calibrate.Timing, error) {
		order := make([]int, len(reqs))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(i, j int) int {
			switch {
			case reqs[i].Arrival < reqs[j].Arrival:
				return -1
			case reqs[i].Arrival > reqs[j].Arrival:
				return 1
			}
			return 0
		})
		t := &formats.Trace{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindTrace}, Requests: make([]formats.TraceRequest, len(reqs))}
		for row, i := range order {
			r := &reqs[i]
			t.Requests[row] = formats.TraceRequest{TimeUs: int64(math.Round(r.Arrival * 1e6)), InputTokens: r.PromptTokens, OutputTokens: r.OutputTokens}
		}
		recs, err := replay.Records(reg, p, name, t)
		if err != nil {
			return nil, err
		}
		out := make([]calibrate.Timing, len(reqs))
		for _, rec := range recs {
			if rec.TraceRow == nil || *rec.TraceRow < 0 || *rec.TraceRow >= len(order) || rec.FirstTokenUs == nil {
				continue
			}
			if rec.Outcome != "completed" && rec.Outcome != "late" {
				continue
			}
			out[order[*rec.TraceRow]] = calibrate.Timing{
				TTFT: float64(*rec.FirstTokenUs-rec.ArrivalUs) / 1e6, E2E: float64(rec.DoneUs-rec.ArrivalUs) / 1e6, Done: true,
				Preemptions: int(rec.Preemptions),
			}
		}
		return out, nil
	}
}

// calibrationReport is --calibrate's report (--output json; a table otherwise).
type calibrationReport struct {
	File        string                 `json:"file"`
	Model       string                 `json:"model"`
	GPU         string                 `json:"gpu"`
	GPUCount    int                    `json:"gpu_count"`
	Failed      int                    `json:"failed_requests"`
	Arrivals    string                 `json:"arrivals"`
	Replays     int                    `json:"replays"`
	Searched    int                    `json:"searched_requests"`
	AtBound     []string               `json:"at_bound,omitempty"`
	Unfinished  int                    `json:"unfinished_requests,omitempty"`
	Held        []string               `json:"held,omitempty"`
	Warnings    []calibrate.Warning    `json:"warnings"`
	Calibration formats.LLMCalibration `json:"calibration"`
}

// runCalibrate is `plan profile --calibrate RESULT.json`: the profile to calibrate, the
// measured run (calibrate.ReadBenchResult, checked against the engine's max_model_len), the
// fit (calibrate.Fit on the repository's engine), the calibrated profile written atomically
// and the errors before and after on the fitted and held-out requests.
func runCalibrate(ctx context.Context, a Args, io *run.IO) error {
	if err := checkCalibrateFlags(a); err != nil {
		return err
	}
	reg := a.Systems
	if reg == nil {
		reg = systems.Default()
	}
	doc, li, use, err := calibrationBase(a)
	if err != nil {
		return err
	}
	prof := doc.LLMs[li]
	src := a.Profile
	if src == "" {
		src = "the --llm estimate"
	}
	runs, err := readRuns(ctx, a, &prof, src, io)
	if err != nil {
		return err
	}
	if prof.Calibration != nil {
		fmt.Fprintf(io.Err, "warning: %s: %s was calibrated before (to %s): the new factors correct its corrected curves\n", src, prof.Model, prof.Calibration.Source)
	}
	names, total, failed := make([]string, len(runs)), 0, 0
	var arrivals []string
	for i, b := range runs {
		names[i], total, failed = b.Name, total+len(b.Requests), failed+b.Failed
		if !slices.Contains(arrivals, b.Arrivals) {
			arrivals = append(arrivals, b.Arrivals)
		}
	}
	what := strings.Join(names, ", ")
	task := progressline.NewStatus(io.Err, io.Quiet, "profile --calibrate")
	task.Note(fmt.Sprintf("replaying %d requests of %s", total, what))
	res, err := calibrate.FitRuns(prof, runs, SimulatorContext(ctx, reg, what), calibrate.Options{
		Progress: func(n int) {
			task.Note(fmt.Sprintf("replay %d of %d requests of %s", n, total, what))
		},
	})
	if err != nil {
		task.Clear()
		if ctx.Err() != nil {
			return err
		}
		return run.UsageErrorf("--calibrate %s: %v", what, err)
	}
	task.Finish(fmt.Sprintf("%d replays", res.Replays))
	doc.LLMs[li] = res.Profile
	rep := calibrationReport{File: a.Out, Model: prof.Model, GPU: prof.GPU, GPUCount: prof.GPUCount, Failed: failed,
		Arrivals: strings.Join(arrivals, "; "), Replays: res.Replays, Searched: res.Searched, AtBound: res.AtBound, Unfinished: res.Unfinished,
		Held: res.Held, Warnings: res.Warnings, Calibration: *res.Profile.Calibration}
	if rep.Warnings == nil {
		rep.Warnings = []calibrate.Warning{}
	}
	if a.Strict && len(res.Warnings) > 0 {
		// Nothing is written: the fit is refused, with the report on stderr.
		writeCalibration(io.Err, rep)
		names := make([]string, len(res.Warnings))
		for i, w := range res.Warnings {
			names[i] = w.Name
		}
		return run.UsageErrorf("--calibrate %s: --strict: the fit has %d warning(s) (%s): nothing written", what, len(names), strings.Join(names, ", "))
	}
	if a.Out == "-" {
		if errs := doc.ValidateFor(use); len(errs) > 0 {
			return run.CheckFailed(fmt.Errorf("calibrated profile does not validate (a bug): %w", errs))
		}
		out, err := formats.Marshal(doc)
		if err != nil {
			return err
		}
		if _, err := io.Out.Write(out); err != nil {
			return err
		}
		writeCalibration(io.Err, rep) // stdout holds the profile
		return nil
	}
	if err := writeProfile(a.Out, doc, use); err != nil {
		var el formats.ErrorList
		if errors.As(err, &el) {
			return run.CheckFailed(fmt.Errorf("calibrated profile does not validate (a bug): %w", err))
		}
		return err
	}
	io.Infof("profile: wrote %s", a.Out)
	if io.JSONOutput() {
		return io.WriteJSON(rep)
	}
	writeCalibration(io.Out, rep)
	return nil
}

// writeCalibration prints the fit: the run, the factors, and a table of the median absolute
// errors before and after on the fitted and the held-out requests.
func writeCalibration(w io.Writer, r calibrationReport) {
	c := r.Calibration
	fmt.Fprintf(w, "calibrated %s on %d×%s to %s: %d requests, the first %d fitted, %d held out", r.Model, max(r.GPUCount, 1), r.GPU, c.Source, c.Requests, c.FitRequests, c.Requests-c.FitRequests)
	if r.Failed > 0 {
		fmt.Fprintf(w, " (%d failed requests left out)", r.Failed)
	}
	fmt.Fprintf(w, "\narrivals: %s\n", r.Arrivals)
	fmt.Fprintf(w, "factors: prefill ×%s, decode ×%s, step overhead %s µs (%d replays)\n",
		strconv.FormatFloat(c.PrefillScale, 'f', 3, 64), strconv.FormatFloat(c.DecodeScale, 'f', 3, 64), oneDecimal(c.StepOverheadUs), r.Replays)
	if r.Searched < c.Requests {
		fmt.Fprintf(w, "search: the replays ran %d of the %d requests (each run's first %d at most); the errors are the whole runs'\n", r.Searched, c.Requests, calibrate.MaxSearchRequests)
	}
	for _, h := range r.Held {
		fmt.Fprintf(w, "held: %s\n", h)
	}
	for _, x := range r.Warnings {
		fmt.Fprintf(w, "warning: %s: %s\n", x.Name, x.Text)
	}
	pct := func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) + "%" }
	row := func(name string, n int, e formats.LLMCalibrationErrors) []string {
		return []string{fmt.Sprintf("%s (%d)", name, n), pct(e.Before.TTFTPct), pct(e.After.TTFTPct), pct(e.Before.ITLPct), pct(e.After.ITLPct), pct(e.Before.E2EPct), pct(e.After.E2EPct)}
	}
	rows := [][]string{row("fit", c.FitRequests, c.Fit), row("held out", c.Requests-c.FitRequests, c.HeldOut)}
	for _, r := range c.Runs {
		rows = append(rows, row(r.Source+" fit", r.FitRequests, r.Fit), row(r.Source+" held out", r.Requests-r.FitRequests, r.HeldOut))
	}
	run.WriteTable(w, []string{"median |error|", "ttft before", "after", "itl before", "after", "e2e before", "after"}, rows)
}

// oneDecimal is v to one decimal, never "-0.0".
func oneDecimal(v float64) string {
	out := strconv.FormatFloat(v, 'f', 1, 64)
	if out == "-0.0" {
		return "0.0"
	}
	return out
}
