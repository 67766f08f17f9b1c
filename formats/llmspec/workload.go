package llmspec

import (
	"fmt"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// WorkloadKey is the workload section of LLM request classes.
const WorkloadKey = "llm_classes"

// Position is the place of the `llm_classes` section in a workload: fourth, after PPipe's,
// PARD's and CascadeServe's sections, before DyOrc's, where it stood when formats typed it, so
// files keep their bytes (formats.Positioned).
const Position = 4

// WorkloadSection is the Section of a workload's `llm_classes` section: the classes, a
// *[]LLMClass (an empty list reads and writes as no section). It is shared LLM vocabulary,
// no one system's: the registry registers it itself (internal/registry/systems.Vocabulary; Sys is
// empty), QLM's planner and the deployment search plan it, and every LLM part reads it with
// ClassesOf.
var WorkloadSection = workloadSection{formats.SectionOf[[]LLMClass]{Name: WorkloadKey, Check: formats.CheckList(WorkloadKey, validateClass), Cross: crossCheckClasses, Position: Position}}

// workloadSection adds to the workload's SectionOf what formats asks of a workload section
// beyond it (formats.ModelUser, formats.TraceTargeter, formats.RateTargeter).
type workloadSection struct{ formats.SectionOf[[]LLMClass] }

// ClassesOf is w's `llm_classes` section, nil when w (or it) is absent. Its elements are
// w's own: changing one changes w.
func ClassesOf(w *formats.Workload) []LLMClass { return formats.ListOf(WorkloadSection.SectionOf, w) }

// SetClasses sets w's `llm_classes` section (empty removes it) and returns w.
func SetClasses(w *formats.Workload, cs []LLMClass) *formats.Workload {
	return formats.SetWorkload(w, WorkloadSection, &cs)
}

// validateClass checks one class of the `llm_classes` section.
func validateClass(c *formats.Checker, cl *LLMClass, p string, seen *formats.Names) {
	c.Check(seen, formats.Field(p, "name"), cl.Name)
	c.NotEmpty(formats.Field(p, "model"), cl.Model)
	c.PositiveDuration(formats.Field(p, "slo"), cl.SLO)
	// TTFT and TPOT SLOs are optional (0 = none); set, they must be positive and bounded.
	for _, d := range []struct {
		name string
		v    formats.Duration
	}{{"ttft_slo", cl.TTFTSLO}, {"tpot_slo", cl.TPOTSLO}} {
		if d.v != 0 {
			c.PositiveDuration(formats.Field(p, d.name), d.v)
		}
	}
	for _, q := range []struct {
		name, v string
		slo     bool
	}{{"slo_percentile", cl.SLOPercentile, true}, {"ttft_percentile", cl.TTFTPercentile, cl.TTFTSLO != 0}, {"tpot_percentile", cl.TPOTPercentile, cl.TPOTSLO != 0}} {
		if _, ok := SLOPercentiles[q.v]; q.v != "" && !ok {
			c.Add(formats.Field(p, q.name), q.v, "must be p50, p90, p95 or p99")
		} else if q.v != "" && !q.slo {
			c.Add(formats.Field(p, q.name), q.v, "states a percentile of an SLO the class does not set (%s)", strings.TrimSuffix(q.name, "_percentile")+"_slo")
		}
	}
	c.Rate(formats.Field(p, "rate_rps"), cl.RateRPS)
	validateTokens(c, &cl.InputTokens, formats.Field(p, "input_tokens"))
	validateTokens(c, &cl.OutputTokens, formats.Field(p, "output_tokens"))
	// prefix_tokens is optional (0 = no shared prefix) and at most the longest prompt.
	c.AtLeast(formats.Field(p, "prefix_tokens"), int64(cl.PrefixTokens), 0)
	if cl.InputTokens.Max >= 1 && cl.PrefixTokens > cl.InputTokens.Max {
		c.Add(formats.Field(p, "prefix_tokens"), cl.PrefixTokens, "must be <= input_tokens.max (%d)", cl.InputTokens.Max)
	}
}

// validateTokens checks a token-length distribution: a mean within (0, max], std >= 0.
func validateTokens(c *formats.Checker, t *TokenProfile, p string) {
	c.Positive(formats.Field(p, "mean"), t.Mean)
	c.NonNegative(formats.Field(p, "std"), t.Std)
	c.AtLeast(formats.Field(p, "max"), int64(t.Max), 1)
	if formats.Finite(t.Mean) && t.Max >= 1 && t.Mean > float64(t.Max) {
		c.Add(formats.Field(p, "mean"), t.Mean, "must be <= max (%d)", t.Max)
	}
}

// crossCheckClasses checks that each class's LLM is in a given profile (when profiles are
// given), and that its longest request fits each of them (classFit).
func crossCheckClasses(cs *[]LLMClass, self string, docs map[string]formats.Document) formats.ErrorList {
	errs := formats.CheckProfiledRefs(docs, false, true, "LLM not found in any profile (%s)", func(add func(path, name string)) {
		for i := range *cs {
			add(formats.Field(formats.Index(WorkloadKey, i), "model"), (*cs)[i].Model)
		}
	})
	return append(errs, classFit(*cs, docs)...)
}

// classFit refuses, as plan solve does (planner/qlm's class checks), a class whose longest
// request — input_tokens.max + output_tokens.max — is more than a given profile of its model
// serves: its engine's max_model_len (vLLM refuses the request, HTTP 400) or its KV capacity
// (the request is never admitted: its KV must fit the cache whole; LLM engine digest §1, §4).
// The profiles are those of the class's model on the GPU types of the clusters given, or
// every one when no cluster is.
func classFit(cs []LLMClass, docs map[string]formats.Document) formats.ErrorList {
	pfiles, profs := formats.Given[formats.Profile](docs)
	_, clusters := formats.Given[formats.Cluster](docs)
	var gpus map[string]bool
	for _, c := range clusters {
		if gpus == nil {
			gpus = map[string]bool{}
		}
		for _, g := range c.GPUs {
			gpus[g.Type] = true
		}
	}
	var c formats.Checker
	for i, cl := range cs {
		long := cl.InputTokens.Max + cl.OutputTokens.Max
		if cl.InputTokens.Max < 1 || cl.OutputTokens.Max < 1 {
			continue // refused by the class's own checks
		}
		path := formats.Field(formats.Index(WorkloadKey, i), "input_tokens.max + output_tokens.max")
		for fi, p := range profs {
			for j := range p.LLMs {
				l := &p.LLMs[j]
				if l.Model != cl.Model || gpus != nil && !gpus[l.GPU] {
					continue
				}
				at := fmt.Sprintf("%s: llms[%d] (%s on %d×%s)", pfiles[fi], j, l.Model, max(l.GPUCount, 1), l.GPU)
				if e := l.Engine; e != nil && e.MaxModelLen > 0 && long > e.MaxModelLen {
					c.Add(path, long, "more than the engine's max_model_len %d (%s: engine.max_model_len): vLLM refuses such a request", e.MaxModelLen, at)
				}
				if l.KVCapacityTokens > 0 && int64(long) > l.KVCapacityTokens {
					c.Add(path, long, "more than the KV cache's %d tokens (%s: kv_capacity_tokens): such a request is never admitted", l.KVCapacityTokens, at)
				}
			}
		}
	}
	return c.Errs()
}

// UsedModels names the LLMs the classes use (formats.ModelUser, for profile coverage).
func (workloadSection) UsedModels(doc formats.Document) (dnn, llm []string) {
	w, _ := doc.(*formats.Workload)
	for _, c := range ClassesOf(w) {
		llm = append(llm, c.Model)
	}
	return nil, llm
}

// TraceTargets: a trace given with the workload may name its classes or their LLMs as
// targets, and its classes as classes (formats.TraceTargeter): what `plan simulate --trace`
// replays (sim.ExactReplay).
func (workloadSection) TraceTargets(doc formats.Document) (targets, classes []string, complete bool) {
	w, _ := doc.(*formats.Workload)
	for _, c := range ClassesOf(w) {
		targets = append(targets, c.Model, c.Name)
		classes = append(classes, c.Name)
	}
	return targets, classes, true
}

// rated names a class and its rate field for formats.RatedList.
var rated = formats.RatedList[LLMClass]{Rated: func(x *LLMClass) (string, *float64) { return x.Name, &x.RateRPS }}

// Targets lists the workload's LLM classes with their rates (formats.RateTargeter).
func (workloadSection) Targets(w *formats.Workload) []formats.RateTarget {
	return rated.Targets(ClassesOf(w))
}

// WithRates sets in w a copy of its classes with each rate rate(name, rate)
// (formats.RateTargeter).
func (workloadSection) WithRates(w *formats.Workload, rate func(string, float64) float64) {
	SetClasses(w, rated.WithRates(ClassesOf(w), rate))
}
