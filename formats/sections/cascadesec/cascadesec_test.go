package cascadesec_test

import (
	"math"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/sectiontest"
)

// The in-tree set: the shared fixtures carry every system's section.
var secs = intree.Sections()

// badCase is a sectiontest.Case written positionally, as formats' tables were.
type badCase struct {
	name   string
	file   string
	mutate func(formats.Document)
	want   []string
}

func cases(bs []badCase) []sectiontest.Case {
	out := make([]sectiontest.Case, len(bs))
	for i, b := range bs {
		out[i] = sectiontest.Case{Name: b.name, File: b.file, Mutate: b.mutate, Want: b.want}
	}
	return out
}

func ms(d time.Duration) formats.Duration { return formats.Duration(d * time.Millisecond) }

var nan = math.NaN()

func boolp(b bool) *bool                               { return &b }
func cascade0(w *formats.Workload) *cascadesec.Cascade { return &cascadesec.CascadesOf(w)[0] }
func gear(p *formats.Plan, i int) *cascadesec.Gear     { return &cascadesec.PlanOf(p).Gears[i] }

// One bad-input case per rule of the workload section (moved from formats' tests).
func TestValidateCascades(t *testing.T) {
	sectiontest.Run(t, secs, cases([]badCase{
		{"cascade name", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Name = "" }), []string{`workload.yaml: cascades[0].name: "": must not be empty`}},
		{"cascade duplicate", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			cascadesec.SetCascades(w, append(cascadesec.CascadesOf(w), cascadesec.CascadesOf(w)[0]))
		}), []string{`workload.yaml: cascades[1].name: "hellaswag": duplicate name (first at cascades[0].name)`}},
		{"cascade no models", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Models, cascade0(w).Validation = nil, nil }), []string{
			`workload.yaml: cascades[0].models: must list at least one model`,
			`workload.yaml: cascades[0].validation: must have at least one record`}},
		{"cascade model empty", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Models = append(cascade0(w).Models, "") }), []string{`workload.yaml: cascades[0].models[2]: "": must not be empty`}},
		{"cascade model duplicate", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Models = append(cascade0(w).Models, "llama-3.2-1b") }), []string{`workload.yaml: cascades[0].models[2]: "llama-3.2-1b": duplicate model`}},
		{"cascade both slos", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			cascade0(w).LatencySLO = &cascadesec.LatencySLO{Percentile: 0.95, Latency: ms(3000)}
		}), []string{`workload.yaml: cascades[0].accuracy_slo: 0.62: set latency_slo or accuracy_slo, not both`}},
		{"cascade no slo", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).AccuracySLO = 0 }), []string{`workload.yaml: cascades[0]: must set latency_slo or accuracy_slo`}},
		{"cascade percentile", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			cascade0(w).AccuracySLO, cascade0(w).LatencySLO = 0, &cascadesec.LatencySLO{Percentile: 95, Latency: ms(3000)}
		}), []string{`workload.yaml: cascades[0].latency_slo.percentile: 95: must be in (0, 1] (a quantile: 0.95 for p95)`}},
		{"cascade latency", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			cascade0(w).AccuracySLO, cascade0(w).LatencySLO = 0, &cascadesec.LatencySLO{Percentile: 0.95, Latency: 0}
		}), []string{`workload.yaml: cascades[0].latency_slo.latency: 0s: must be > 0`}},
		{"cascade accuracy", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).AccuracySLO = 1.5 }), []string{`workload.yaml: cascades[0].accuracy_slo: 1.5: must be in (0, 1]`}},
		{"cascade qps_max", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).QPSMax = 0 }), []string{`workload.yaml: cascades[0].qps_max: 0: must be > 0`}},
		{"cascade qps_ranges", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).QPSRanges = -1 }), []string{`workload.yaml: cascades[0].qps_ranges: -1: must be >= 1 (or omitted)`}},
		{"cascade histogram negative", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).QPSHistogram[2] = -0.2 }), []string{`workload.yaml: cascades[0].qps_histogram[2]: -0.2: must be >= 0`}},
		{"cascade histogram zero", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).QPSHistogram = []float64{0, 0} }), []string{`workload.yaml: cascades[0].qps_histogram: must not be all zero`}},
		{"record sample", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Validation[0].Sample, cascade0(w).Validation[1].Sample = -1, -1 }), []string{
			`workload.yaml: cascades[0].validation[0].sample: -1: must be >= 0`,
			`workload.yaml: cascades[0].validation[1].sample: -1: must be >= 0`}},
		{"record model empty", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			cascade0(w).Validation = append(cascade0(w).Validation, cascadesec.ValidationRecord{Sample: 0, Pred: "B", Label: "B"})
		}), []string{`workload.yaml: cascades[0].validation[8].model: "": must not be empty`}},
		{"record model unknown", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			cascade0(w).Validation = append(cascade0(w).Validation, cascadesec.ValidationRecord{Sample: 0, Model: "gpt", Pred: "B", Label: "B"})
		}), []string{`workload.yaml: cascades[0].validation[8].model: "gpt": unknown model: not in cascades[0].models`}},
		{"record cert", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Validation[3].Cert = nan }), []string{`workload.yaml: cascades[0].validation[3].cert: NaN: must be a finite number`}},
		{"record cert above 1", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Validation[3].Cert = 4.2 }), []string{`workload.yaml: cascades[0].validation[3].cert: 4.2: must be in [0, 1] (a certainty: top-1 minus top-2 normalized score; set certainty: score for another scale, e.g. logit gaps)`}},
		{"record label and correct", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Validation[3].Correct = boolp(true) }), []string{`workload.yaml: cascades[0].validation[3].correct: true: set label or correct, not both`}},
		{"record neither label nor correct", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Validation[3].Label = "" }), []string{`workload.yaml: cascades[0].validation[3]: must set label or correct`}},
		{"record duplicate", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			cascade0(w).Validation = append(cascade0(w).Validation, cascade0(w).Validation[0])
		}), []string{`workload.yaml: cascades[0].validation[8]: (sample 0, model llama-3.2-1b): duplicate record (first at cascades[0].validation[0])`}},
		{"record label mismatch", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Validation[1].Label = "C" }), []string{`workload.yaml: cascades[0].validation[1].label: "C": differs from cascades[0].validation[0].label ("B") for the same sample`}},
		{"records cover different samples", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Validation = cascade0(w).Validation[:7] }), []string{`workload.yaml: cascades[0].validation: "llama-3.1-8b": no records for samples 3: every model must cover the same samples`}},
		{"model without records", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			c := cascade0(w)
			var keep []cascadesec.ValidationRecord
			for _, r := range c.Validation {
				if r.Model != "llama-3.1-8b" {
					keep = append(keep, r)
				}
			}
			c.Validation = keep
		}), []string{`workload.yaml: cascades[0].validation: "llama-3.1-8b": no records for this model`}},
		{"cert score accepts logits", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			cascade0(w).Certainty, cascade0(w).Validation[3].Cert = "score", -4.2
		}), nil},
		{"certainty scale", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Certainty = "logit" }), []string{
			`workload.yaml: cascades[0].certainty: "logit": must be one of probability, score`}},
		{"candidates and validation", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Candidates = candidates() }), []string{
			`workload.yaml: cascades[0].candidates: set one of validation, validation_file or candidates`}},
		{"validation and validation_file", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).ValidationFile = "v.csv" }), []string{
			`workload.yaml: cascades[0].candidates: set one of validation, validation_file or candidates`}},
		{"validation_file alone", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Validation, cascade0(w).ValidationFile = nil, "v.csv" }), nil},
		{"test and test_file", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			cascade0(w).Test, cascade0(w).TestFile = cascade0(w).Validation, "t.csv"
		}), []string{`workload.yaml: cascades[0].test_file: "t.csv": set test or test_file, not both`}},
		{"candidates valid", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { cascade0(w).Validation, cascade0(w).Candidates = nil, candidates() }), nil},
		{"candidate reach increasing", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			c := cascade0(w)
			c.Validation, c.Candidates = nil, candidates()
			c.Candidates[2].Reach = []float64{0.5, 0.8}
		}), []string{
			`workload.yaml: cascades[0].candidates[2].reach[0]: 0.5: must be 1: every request reaches the first stage`,
			`workload.yaml: cascades[0].candidates[2].reach[1]: 0.8: must not exceed cascades[0].candidates[2].reach[0] (0.5): fractions are non-increasing along the cascade`}},
		{"candidate reach outside [0,1]", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			c := cascade0(w)
			c.Validation, c.Candidates = nil, candidates()
			c.Candidates[1].Reach[1] = -0.2
		}), []string{`workload.yaml: cascades[0].candidates[1].reach[1]: -0.2: must be in [0, 1] (a fraction of requests)`}},
		{"candidate reach first stage", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			c := cascade0(w)
			c.Validation, c.Candidates = nil, candidates()
			c.Candidates[1].Reach[0] = 0.9
		}), []string{`workload.yaml: cascades[0].candidates[1].reach[0]: 0.9: must be 1: every request reaches the first stage`}},
		{"candidate accuracy", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			c := cascade0(w)
			c.Validation, c.Candidates = nil, candidates()
			c.Candidates[0].Accuracy = 1.2
		}), []string{`workload.yaml: cascades[0].candidates[0].accuracy: 1.2: must be in [0, 1]`}},
		{"candidate shape", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			c := cascade0(w)
			c.Validation, c.Candidates = nil, candidates()
			c.Candidates[1].Models = append(c.Candidates[1].Models, "gpt")
		}), []string{
			`workload.yaml: cascades[0].candidates[1].models[2]: "gpt": unknown model: not in cascades[0].models`,
			`workload.yaml: cascades[0].candidates[1].thresholds: 1: length must be len(models)-1 = 2`,
			`workload.yaml: cascades[0].candidates[1].reach: 2: length must be len(models) = 3 (the fraction of requests reaching each stage)`}},
		{"candidate threshold scale", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			c := cascade0(w)
			c.Validation, c.Candidates = nil, candidates()
			c.Candidates[1].Thresholds[0] = 3.5
		}), []string{`workload.yaml: cascades[0].candidates[1].thresholds[0]: 3.5: must be in [0, 1] (probability certainties; set certainty: score for another scale)`}},
		{"test model the validation set lacks", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			c := cascade0(w)
			c.Test = append([]cascadesec.ValidationRecord(nil), c.Validation...)
			c.Test[2].Model = "gpt"
		}), []string{
			`workload.yaml: cascades[0].test[2].model: "gpt": a model the validation set lacks: not in cascades[0].models`,
			`workload.yaml: cascades[0].test: "llama-3.2-1b": no records for samples 1: every model must cover the same samples`}},
		{"test set valid", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			c := cascade0(w)
			c.Test = append([]cascadesec.ValidationRecord(nil), c.Validation...)
		}), nil},
	}))
}

// candidates is a valid candidate table for the fixture's two models.
func candidates() []cascadesec.CascadeCandidate {
	return []cascadesec.CascadeCandidate{
		{Models: []string{"llama-3.2-1b"}, Accuracy: 0.5, Reach: []float64{1}},
		{Models: []string{"llama-3.2-1b", "llama-3.1-8b"}, Thresholds: []float64{0.4}, Accuracy: 0.61, Reach: []float64{1, 0.3}},
		{Models: []string{"llama-3.1-8b", "llama-3.2-1b"}, Thresholds: []float64{0.2}, Accuracy: 0.6, Reach: []float64{1, 0.1}},
	}
}

// One bad-input case per rule of the plan section (moved from formats' tests).
func TestValidatePlan(t *testing.T) {
	sectiontest.Run(t, secs, cases([]badCase{
		{"cascade task", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { cascadesec.PlanOf(p).Task = "" }), []string{`plan-sections.json: cascade.task: "": must not be empty`}},
		{"cascade no placement", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) {
			cascadesec.PlanOf(p).Placement, cascadesec.PlanOf(p).Gears = nil, cascadesec.PlanOf(p).Gears[:0]
		}), []string{
			`plan-sections.json: cascade.placement: must place at least one replica`,
			`plan-sections.json: cascade.gears: must list at least one gear`}},
		{"replica model", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) {
			cascadesec.PlanOf(p).Placement = append(cascadesec.PlanOf(p).Placement, cascadesec.Replica{GPUs: []int{3}})
		}), []string{`plan-sections.json: cascade.placement[3].model: "": must not be empty`}},
		{"replica gpus", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { cascadesec.PlanOf(p).Placement[2].GPUs = nil }), []string{`plan-sections.json: cascade.placement[2].gpus: must list at least one GPU index`}},
		{"replica gpu negative", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { cascadesec.PlanOf(p).Placement[2].GPUs = []int{-1} }), []string{`plan-sections.json: cascade.placement[2].gpus[0]: -1: must be >= 0`}},
		{"replica gpu out of range", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { cascadesec.PlanOf(p).Placement[2].GPUs = []int{16} }), []string{`plan-sections.json: cascade.placement[2].gpus[0]: 16: must be < 16, the number of GPUs in provenance.embedded.cluster`}},
		{"replica gpu duplicate", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { cascadesec.PlanOf(p).Placement[2].GPUs = []int{2, 2} }), []string{`plan-sections.json: cascade.placement[2].gpus[1]: 2: duplicate GPU index`}},
		{"gears start", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { gear(p, 0).QLo = 1 }), []string{`plan-sections.json: cascade.gears[0].q_lo: 1: must be 0: gears must start at QPS 0`}},
		{"gears contiguous", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { gear(p, 1).QLo = 2.5 }), []string{`plan-sections.json: cascade.gears[1].q_lo: 2.5: must equal gears[0].q_hi (2): gears must be contiguous`}},
		{"gear q_hi", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { gear(p, 2).QHi = 4 }), []string{`plan-sections.json: cascade.gears[2].q_hi: 4: must be > q_lo (4)`}},
		{"gear no models", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { g := gear(p, 0); g.Models, g.Share, g.Trigger = nil, nil, nil }), []string{`plan-sections.json: cascade.gears[0].models: must list at least one model`}},
		{"gear model empty", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { g := gear(p, 0); g.Models, g.Thr = append(g.Models, ""), []float64{0.2} }), []string{`plan-sections.json: cascade.gears[0].models[1]: "": must not be empty`}},
		{"gear model duplicate", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) {
			g := gear(p, 1)
			g.Models, g.Thr = append(g.Models, "llama-3.2-1b"), []float64{0.3, 0.2}
		}), []string{`plan-sections.json: cascade.gears[1].models[2]: "llama-3.2-1b": duplicate model`}},
		{"gear model unplaced", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { cascadesec.PlanOf(p).Placement = cascadesec.PlanOf(p).Placement[1:] }), []string{
			`plan-sections.json: cascade.gears[1].models[0]: "llama-3.2-1b": model has no replica in cascade.placement`,
			`plan-sections.json: cascade.gears[1].share["llama-3.2-1b"]: 1: length must be the number of replicas of llama-3.2-1b in cascade.placement (0)`,
			`plan-sections.json: cascade.gears[2].models[0]: "llama-3.2-1b": model has no replica in cascade.placement`,
			`plan-sections.json: cascade.gears[2].share["llama-3.2-1b"]: 1: length must be the number of replicas of llama-3.2-1b in cascade.placement (0)`}},
		{"gear thr length", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { gear(p, 1).Thr = nil }), []string{`plan-sections.json: cascade.gears[1].thr: 0: length must be len(models)-1 = 1`}},
		{"gear thr negative", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { gear(p, 1).Thr[0] = -0.1 }), []string{`plan-sections.json: cascade.gears[1].thr[0]: -0.1: must be >= 0`}},
		{"share unknown model", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { gear(p, 0).Share["llama-3.2-1b"] = []float64{1} }), []string{`plan-sections.json: cascade.gears[0].share["llama-3.2-1b"]: "llama-3.2-1b": not a model of this gear`}},
		{"share length", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { gear(p, 0).Share["llama-3.1-8b"] = []float64{1} }), []string{`plan-sections.json: cascade.gears[0].share["llama-3.1-8b"]: 1: length must be the number of replicas of llama-3.1-8b in cascade.placement (2)`}},
		{"share value", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { gear(p, 0).Share["llama-3.1-8b"] = []float64{1.5, -0.5} }), []string{
			`plan-sections.json: cascade.gears[0].share["llama-3.1-8b"][0]: 1.5: must be in [0, 1]`,
			`plan-sections.json: cascade.gears[0].share["llama-3.1-8b"][1]: -0.5: must be in [0, 1]`}},
		{"share sum", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { gear(p, 0).Share["llama-3.1-8b"] = []float64{0.5, 0.4} }), []string{`plan-sections.json: cascade.gears[0].share["llama-3.1-8b"]: must sum to 1 (sums to 0.9)`}},
		{"trigger unknown model", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { gear(p, 0).Trigger["llama-3.2-1b"] = 1 }), []string{`plan-sections.json: cascade.gears[0].trigger["llama-3.2-1b"]: "llama-3.2-1b": not a model of this gear`}},
		{"trigger value", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { gear(p, 0).Trigger["llama-3.1-8b"] = 0 }), []string{`plan-sections.json: cascade.gears[0].trigger["llama-3.1-8b"]: 0: must be >= 1`}},
		{"gear expected accuracy", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { gear(p, 0).ExpAcc = 1.2 }), []string{`plan-sections.json: cascade.gears[0].expected_accuracy: 1.2: must be in [0, 1]`}},
		{"gear expected work", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { gear(p, 0).ExpWork = -1 }), []string{`plan-sections.json: cascade.gears[0].expected_work_s: -1: must be >= 0`}},
		{"gear expected platency", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { gear(p, 0).ExpPLat = -1 }), []string{`plan-sections.json: cascade.gears[0].expected_platency_ms: -1: must be >= 0`}},
		{"cascade poll", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { cascadesec.PlanOf(p).PollMs = -1 }), []string{`plan-sections.json: cascade.poll_ms: -1: must be >= 0`}},
		{"cascade alpha", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { cascadesec.PlanOf(p).Alpha = nan }), []string{`plan-sections.json: cascade.alpha: NaN: must be >= 0`}},
		{"cascade max_batch", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { cascadesec.PlanOf(p).MaxBatch = -1 }), []string{`plan-sections.json: cascade.max_batch: -1: must be >= 1 (or omitted)`}},
	}))
}

// The plan section against the other files given with it (moved from formats' CheckSet
// cases).
func TestCrossCheck(t *testing.T) {
	sectiontest.RunCross(t, secs, []sectiontest.CrossCase{
		{Name: "cascade model not profiled", Files: []string{"profile.json", "workload.yaml"}, Mutate: func(d map[string]formats.Document) {
			cascadesec.CascadesOf(d["workload.yaml"].(*formats.Workload))[0].Models[1] = "llama-2-70b"
		}, Want: []string{`workload.yaml: cascades[0].models[1]: "llama-2-70b": model not found in any profile (profile.json)`}},
		{Name: "placed model not profiled", Files: []string{"profile.json", "plan-sections.json"}, Mutate: func(d map[string]formats.Document) {
			cascadesec.PlanOf(d["plan-sections.json"].(*formats.Plan)).Placement[0].Model = "gpt-2"
		}, Want: []string{`plan-sections.json: cascade.placement[0].model: "gpt-2": model not found in any profile (profile.json)`}},
		{Name: "task not in the workload", Files: []string{"workload.yaml", "plan-sections.json"}, Mutate: func(d map[string]formats.Document) {
			cascadesec.PlanOf(d["plan-sections.json"].(*formats.Plan)).Task = "mmlu"
		}, Want: []string{`plan-sections.json: cascade.task: "mmlu": not a cascade of workload.yaml`}},
	})
	empty := map[string]formats.Document{"x.json": cascadesec.SetPlan(&formats.Plan{}, &cascadesec.CascadePlan{})}
	_ = formats.CheckSet(empty, secs)
}
