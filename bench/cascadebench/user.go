package cascadebench

// This file runs the comparison on a user's own measured data: their
// profiles, their per-sample validation records (or a workload with a cascade: records or a
// candidates table, and held-out test records) and their per-second trace, instead of the
// bundled stand-ins.

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/planner"
	pc "github.com/plan-dev/plan/planner/cascade"
)

// userInput are the flags naming the user's data.
type userInput struct {
	profile, records, test, cluster string
	peak                            float64
	slo                             time.Duration
	targets                         []float64
	maxGPUs, ranges                 int
}

// given reports whether any user-data flag is set (then --profile and --records are needed).
func (u *userInput) given() bool {
	return u.profile != "" || u.records != "" || u.test != "" || u.cluster != ""
}

// defaultUserGPUMem is the GPU memory assumed without --cluster: the paper's V100-32GB.
const defaultUserGPUMem = 32 << 30

// readRecords reads per-sample records from a CSV/JSONL/JSON records file, or the first
// cascade of a workload file (YAML or JSON of kind Workload), read with the registry's
// sections secs (benchapi.Env.Sections).
func readRecords(path string, secs *formats.SectionSet) (*cascadesec.Cascade, error) {
	data, err := formats.ReadBytes(path)
	if err != nil {
		return nil, err
	}
	ext := strings.ToLower(filepath.Ext(path))
	if ext == ".yaml" || ext == ".yml" || ext == ".json" && strings.Contains(string(data[:min(len(data), 4096)]), `"Workload"`) {
		w, err := formats.DecodeInto[*formats.Workload](path, data, secs)
		if err != nil {
			return nil, err
		}
		if len(cascadesec.CascadesOf(w)) == 0 {
			return nil, fmt.Errorf("%s: cascades: the workload has no cascade", path)
		}
		if err := cascadesec.LoadCascadeFiles(w, path); err != nil {
			return nil, err
		}
		c := cascadesec.CascadesOf(w)[0]
		return &c, nil
	}
	score := false
	recs, err := cascadesec.ImportValidation(path, data, "")
	if err != nil {
		// certainties on another scale (logit gaps): accept them as scores
		if r2, err2 := cascadesec.ImportValidationScale(path, data, "", true); err2 == nil {
			recs, score, err = r2, true, nil
		}
	}
	if err != nil {
		return nil, err
	}
	c := &cascadesec.Cascade{Validation: recs}
	if score {
		c.Certainty = "score"
	}
	for _, r := range recs {
		if !slices.Contains(c.Models, r.Model) {
			c.Models = append(c.Models, r.Model)
		}
	}
	return c, nil
}

// prepareUser builds the bench's set-up from the user's files: the trace keeps its own
// rates unless --peak rescales it; the test records (--test, or the workload's) are the
// served requests, else the validation records are replayed (said in the output).
func prepareUser(u *userInput, trace []float64, env benchapi.Env) (*data, error) {
	prof, err := formats.ReadInto[*formats.Profile](u.profile, nil)
	if err != nil {
		return nil, bench.Usagef("--profile: %v", err)
	}
	// Planned on the measured curves with their outliers replaced, as plan solve plans.
	for _, w := range formats.FitProfile(prof) {
		env.Infof("warning: %s: %s", u.profile, w)
	}
	c, err := readRecords(u.records, env.Sections)
	if err != nil {
		return nil, bench.Usagef("--records: %v", err)
	}
	var cl *formats.Cluster
	if u.cluster != "" {
		if cl, err = formats.ReadInto[*formats.Cluster](u.cluster, nil); err != nil {
			return nil, bench.Usagef("--cluster: %v", err)
		}
		cl.GPUs[0].Count = max(cl.GPUs[0].Count, u.maxGPUs)
	} else {
		gpu := ""
		for _, m := range c.Models {
			if mp, ok := prof.Model(m); ok && len(mp.Latency) > 0 {
				gpu = mp.Latency[0].GPU
				break
			}
		}
		if gpu == "" {
			return nil, bench.Usagef("--profile: %s: no latency for any of the records' models (%s)", u.profile, strings.Join(c.Models, ", "))
		}
		env.Infof("cascade bench: no --cluster: %d × %s with %d GiB each assumed", u.maxGPUs, gpu, defaultUserGPUMem>>30)
		cl = &formats.Cluster{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindCluster},
			Metadata: formats.Metadata{Name: "user"}, GPUs: []formats.GPUPool{{Type: gpu, Count: u.maxGPUs, PerServer: 2, MemoryBytes: defaultUserGPUMem}}, NICGbps: 10}
	}
	q := trace
	peak := slices.Max(trace)
	if u.peak > 0 {
		q, peak = Scale(trace, u.peak), u.peak
	}
	if c.Name == "" {
		c.Name = "user"
	}
	c.QPSMax, c.QPSRanges, c.QPSHistogram = peak, u.ranges, Histogram(q)
	c.LatencySLO, c.AccuracySLO = &cascadesec.LatencySLO{Percentile: 0.95, Latency: formats.Duration(u.slo)}, 0
	if u.test != "" {
		tc, err := readRecords(u.test, env.Sections)
		if err != nil {
			return nil, bench.Usagef("--test: %v", err)
		}
		c.Test = tc.Validation
	}
	w := cascadesec.SetCascades(&formats.Workload{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindWorkload},
		Metadata: formats.Metadata{Name: c.Name}}, []cascadesec.Cascade{*c})
	// the records (and test records) as the workload they make: every rule of a cascade's
	// records, then the models against the profile
	secs := &formats.SectionSet{Systems: []string{"cascade"}, Workload: []formats.Section{cascadesec.WorkloadSection}}
	name := u.records
	if u.test != "" {
		name += " with --test " + u.test
	}
	if errs := formats.Validate(w, secs); len(errs) > 0 {
		return nil, bench.Usagef("%v", errs.WithFile(name))
	}
	if errs := formats.CheckSet(map[string]formats.Document{u.profile: prof, name: w}, secs); len(errs) > 0 {
		return nil, bench.Usagef("%v", errs)
	}
	in := planner.Inputs{Workload: w, Profiles: []*formats.Profile{prof}, Cluster: cl}
	hw, probs := pc.HardwareOf(cl)
	if probs != nil {
		return nil, bench.Usagef("--cluster: %s", probs[0])
	}
	c = &cascadesec.CascadesOf(w)[0]
	serve := *c
	on := "validation records (no --test: served accuracy is not held out)"
	if len(c.Test) > 0 {
		serve.Validation, serve.Candidates, on = c.Test, nil, "test records"
	}
	test, probs := pc.NewTask(&serve, "records", in.Profiles, hw.GPU, hw.Mem)
	if probs != nil {
		return nil, bench.Usagef("%s", strings.Join(probs, "\n"))
	}
	if len(c.Candidates) > 0 && len(c.Test) == 0 {
		on = "a synthetic realization of the candidates table (give --test records for measured accuracy)"
	}
	env.Infof("cascade bench: serving replays the %s", on)
	targets := u.targets
	if len(targets) == 0 {
		best := 0.0
		for m := range test.Models {
			best = math.Max(best, test.Accuracy(m))
		}
		targets = []float64{best - 0.015, best - 0.005, best}
		for i := range targets {
			targets[i] = math.Round(targets[i]*1000) / 1000
		}
	}
	s := Setup{Name: c.Name, Peak: peak, MaxGPUs: u.maxGPUs, Latency: u.slo, Targets: targets, Ranges: u.ranges}
	return &data{s: s, in: in, c: c, test: test, qps: q, samples: test.N}, nil
}

// Planned is the fleet a system's planner provisions for a target (no replay).
type Planned struct {
	Setup     string  `json:"setup"`
	Target    float64 `json:"accuracy_target"`
	System    string  `json:"system"`
	Provision string  `json:"provision"`
	GPUs      int     `json:"gpus"` // 0 = none up to MaxGPUs
	PlanAcc   float64 `json:"plan_accuracy"`
	Note      string  `json:"note,omitempty"`
}

// planned runs plan solve --min-gpus for CascadeServe and the static baselines, DynBa and
// MS+ under both provisioning rules (the paper's queue rule and the peak-sized fleet).
func (d *data) planned(ctx context.Context, target float64) []Planned {
	type run struct{ strategy, provision string }
	runs := []run{{pc.StrategyCascadeServe, pc.ProvisionPeak}, {pc.StrategyDynBa, pc.ProvisionQueue}, {pc.StrategyDynBa, pc.ProvisionPeak},
		{pc.StrategyMSPlus, pc.ProvisionQueue}, {pc.StrategyMSPlus, pc.ProvisionPeak}, {pc.StrategyNoCascade, pc.ProvisionPeak}}
	var out []Planned
	for _, r := range runs {
		row := Planned{Setup: d.s.Name, Target: target, System: r.strategy, Provision: r.provision}
		_, res, err := pc.Solve(ctx, d.in, pc.Options{Strategy: r.strategy, Latency: d.s.Latency, Accuracy: target, MinGPUs: true, Provision: r.provision})
		if err != nil {
			row.Note = err.Error()
			if len(row.Note) > 90 {
				row.Note = row.Note[:90] + "…"
			}
		} else {
			row.GPUs, row.PlanAcc = res.HW.N, res.Acc
			if res.Provisioned < d.s.Peak {
				row.Note = fmt.Sprintf("planned for %.0f QPS, the %.0f peak queued", res.Provisioned, d.s.Peak)
			}
		}
		out = append(out, row)
	}
	return out
}
