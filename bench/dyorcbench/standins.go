// Package dyorcbench is `plan bench dyorc`: DyOrc's evaluation (DyOrc §8) in the simulator
// on our stand-in profiles (the paper publishes none): the four applications and MIX, DyOrc against every
// baseline (mean and p99 latency, speed-up L_base/L_dyorc − 1 next to the paper's 4–198 %),
// prediction accuracy per application next to the paper's 76–94 %, and the scaling sweep to
// 256 GPUs with the scheduler's own DP cost charged (Fig.13's U-shape), with the measured
// decision time per request.
package dyorcbench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	dp "github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
)

func lin(l1, lmax float64, mb int) *dyorcsec.ServiceLatency {
	per := (lmax - l1) / float64(mb-1)
	return &dyorcsec.ServiceLatency{BaseUs: (l1 - per) * 1000, PerItemUs: per * 1000}
}

// llmSpread is the language models' work spread: each call's output length, and so its
// work, is U(0.5, 1.5) of the profile's (our stand-in set-up; the paper's LLM tasks vary in
// length, which its scheduler cannot know in advance).
const llmSpread = 0.5

// StandIns returns our stand-in services and the four applications (the same numbers as
// testdata/dyorc/gen.py).
func StandIns() *dyorcsec.Workflows {
	s := map[string]dyorcsec.Service{
		"vit":   {WeightsGB: 0.6, MaxBatch: 64, Latency: lin(14, 127, 64), OutKB: 512, OutKind: "tensor"},
		"llm7b": {WeightsGB: 13.5, MaxBatch: 32, Latency: lin(1600, 6600, 32), OutKB: 2, OutKind: "general", WorkSpread: llmSpread},
		"sd15":  {WeightsGB: 2.2, MaxBatch: 8, Latency: lin(2500, 12000, 8), OutKB: 400, OutKind: "general"},
	}
	choice := map[string]float64{}
	h := 0.0
	for k := 1; k <= 25; k++ {
		h += 1 / float64(k)
	}
	for k := 0; k < 25; k++ {
		n := fmt.Sprintf("card%02d", k)
		s[n] = dyorcsec.Service{WeightsGB: 2.6, MaxBatch: 32, Latency: lin(900, 3200, 32), OutKB: 2, OutKind: "general", WorkSpread: llmSpread}
		choice[n] = 1 / (float64(k+1) * h)
	}
	for _, x := range []struct {
		n      string
		gb, l1 float64
		mb     int
	}{{"det", 0.2, 10, 32}, {"ocr", 0.4, 30, 32}, {"cap", 1.0, 200, 32}, {"upscale", 0.1, 80, 8}} {
		s[x.n] = dyorcsec.Service{WeightsGB: x.gb, MaxBatch: x.mb, Latency: lin(x.l1, 4*x.l1, x.mb), OutKB: 256, OutKind: "tensor"}
	}
	apps := map[string]dyorcsec.App{
		"gill": {RateRPS: 2, Steps: []dyorcsec.Step{
			{ID: "enc", Service: "vit", When: "in.images>0", P: 0.5},
			{ID: "llm", Service: "llm7b", After: []string{"enc?", "$in"}},
			{ID: "gen", Service: "sd15", After: []string{"llm"}, When: "llm.img_tokens>0", P: 0.25}}},
		"kc": {RateRPS: 2, Steps: []dyorcsec.Step{
			{ID: "ask", Service: "llm7b", After: []string{"$in"}},
			{ID: "card", Choice: choice, After: []string{"ask"}, When: "ask.need", P: 0.6},
			{ID: "ans", Service: "llm7b", After: []string{"card?", "$in"}}}},
		"debate": {RateRPS: 1, Loop: &dyorcsec.Loop{ID: "round", MaxIter: 4, Until: "consensus", PStop: []float64{0.6, 0.6, 0.7, 1},
			Body: []dyorcsec.Step{{ID: "agent", Service: "llm7b", Fanout: 3, After: []string{"round.prev*", "$in"}}}}},
		"image": {RateRPS: 20, Steps: []dyorcsec.Step{
			{ID: "det", Service: "det", After: []string{"$in"}},
			{ID: "read", Choice: map[string]float64{"ocr": 0.4, "cap": 0.6}, After: []string{"det"}},
			{ID: "up", Service: "upscale", After: []string{"read"}, When: "read.lowres", P: 0.3}}},
	}
	return &dyorcsec.Workflows{Services: s, Apps: apps}
}

// Only returns the stand-ins restricted to the named apps (and the services they call).
func Only(wf *dyorcsec.Workflows, apps ...string) *dyorcsec.Workflows {
	out := &dyorcsec.Workflows{Services: map[string]dyorcsec.Service{}, Apps: map[string]dyorcsec.App{}}
	for _, a := range apps {
		app := wf.Apps[a]
		out.Apps[a] = app
		steps := app.Steps
		if app.Loop != nil {
			steps = app.Loop.Body
		}
		for _, st := range steps {
			if st.Service != "" {
				out.Services[st.Service] = wf.Services[st.Service]
			}
			for c := range st.Choice {
				out.Services[c] = wf.Services[c]
			}
		}
	}
	return out
}

// AzureLike generates per-app arrival times (µs) over secs seconds, our stand-in for the Azure
// Functions trace the paper replays (DyOrc §8, "Workload"): 30 functions with Zipf popularity,
// each minute's rate scaled by a lognormal(σ 0.8) burst and a slow sine, Poisson arrivals
// within the minute, function i serving app i mod #apps, scaled so app a's mean rate is
// rates[a].
func AzureLike(rates []float64, secs int, seed uint64) [][]float64 {
	return AzureLikeChange(rates, nil, 0, secs, seed)
}

// AzureLikeChange is AzureLike whose app a's rate is multiplied by mult[a] from minute
// changeMin on (the MIX pattern change, DyOrc §8.2, Fig. 10: GILL ×2, KC and Debate ×0.5); nil
// mult is AzureLike. The random draws are the same as AzureLike's up to the change.
func AzureLikeChange(rates, mult []float64, changeMin, secs int, seed uint64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 0xa2))
	const nf = 30
	pop := make([]float64, nf)
	for i := range pop {
		pop[i] = 1 / float64(i+1)
	}
	na := len(rates)
	share := make([]float64, na) // popularity mass per app
	for i := 0; i < nf; i++ {
		share[i%na] += pop[i]
	}
	out := make([][]float64, na)
	minutes := (secs + 59) / 60
	for m := 0; m < minutes; m++ {
		sine := 1 + 0.3*math.Sin(2*math.Pi*float64(m)/60)
		for i := 0; i < nf; i++ {
			a := i % na
			burst := math.Exp(0.8*rng.NormFloat64() - 0.32) // mean 1
			lam := rates[a] * pop[i] / share[a] * burst * sine
			if mult != nil && m >= changeMin {
				lam *= mult[a]
			}
			t := float64(m) * 60e6
			end := math.Min(float64(m+1)*60e6, float64(secs)*1e6)
			for lam > 0 {
				t += rng.ExpFloat64() / lam * 1e6
				if t >= end {
					break
				}
				out[a] = append(out[a], t)
			}
		}
	}
	for a := range out {
		sort.Float64s(out[a])
	}
	return out
}

// compile compiles and panics on a bug in the stand-ins.
func compile(wf *dyorcsec.Workflows) *dp.Workflow {
	w, err := dp.Compile(wf)
	if err != nil {
		panic(fmt.Sprintf("dyorcbench stand-ins: %v", err))
	}
	return w
}
