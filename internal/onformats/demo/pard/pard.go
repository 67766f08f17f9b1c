// Package pard holds PARD's four bundled pipeline applications (tm, lv, ga, da) and the
// stand-in profiles of their modules (PARD §5.1): the paper's 2080Ti profiles are not
// public, so every module uses the linear model d(b) = a + c·b of its stage type. The
// workload, profile and cluster are built in Go (so tests and `plan bench pard` need no
// files) and mirrored in testdata/pard for the CLI; a test keeps the copies in sync.
package pard

import (
	"fmt"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/pardsec"
)

// GPU is the stand-in GPU type (the paper's testbed GPU).
const GPU = "2080Ti"

// MaxBatch is the largest batch size profiled.
const MaxBatch = 32

// StageType is a kind of module with its linear latency model d(b) = A + C·b in ms.
type StageType struct {
	Name string
	A, C float64
}

// Stage types: our linear fits d(b) = a + c·b ms, typical of CNNs.
var (
	Detector   = StageType{"detector", 20, 8}
	Pose       = StageType{"pose", 10, 4}
	OCR        = StageType{"ocr", 8, 3}
	Face       = StageType{"face", 6, 2.5}
	Counter    = StageType{"counter", 5, 2}      // kill-count, alive-player
	Recognizer = StageType{"recognizer", 4, 1.5} // expression, eye, health, icon
)

// Module is one module of a bundled application.
type Module struct {
	Name  string
	Type  StageType
	After []string
}

// App is a bundled application.
type App struct {
	Name, Title string
	SLO         time.Duration
	Modules     []Module
}

// Apps are the four PARD applications. da follows PARD §5.1: det → {face ∥ pose} →
// expression; the paper does not place eye tracking in da, so we append it → eye.
var Apps = []App{
	{Name: "tm", Title: "traffic monitoring", SLO: 400 * time.Millisecond, Modules: []Module{
		{"object-detection", Detector, nil},
		{"face-recognition", Face, []string{"object-detection"}},
		{"text-recognition", OCR, []string{"face-recognition"}},
	}},
	{Name: "lv", Title: "live video", SLO: 500 * time.Millisecond, Modules: []Module{
		{"person-detection", Detector, nil},
		{"face-recognition", Face, []string{"person-detection"}},
		{"expression-recognition", Recognizer, []string{"face-recognition"}},
		{"eye-tracking", Recognizer, []string{"expression-recognition"}},
		{"pose-recognition", Pose, []string{"eye-tracking"}},
	}},
	{Name: "ga", Title: "game analysis", SLO: 600 * time.Millisecond, Modules: []Module{
		{"object-detection", Detector, nil},
		{"kill-count", Counter, []string{"object-detection"}},
		{"alive-player", Counter, []string{"kill-count"}},
		{"health-value", Recognizer, []string{"alive-player"}},
		{"icon-recognition", Recognizer, []string{"health-value"}},
	}},
	{Name: "da", Title: "DAG live video", SLO: 420 * time.Millisecond, Modules: []Module{
		{"person-detection", Detector, nil},
		{"face-recognition", Face, []string{"person-detection"}},
		{"pose-recognition", Pose, []string{"person-detection"}},
		{"expression-recognition", Recognizer, []string{"face-recognition", "pose-recognition"}},
		{"eye-tracking", Recognizer, []string{"expression-recognition"}},
	}},
}

// AppByName returns the bundled application name.
func AppByName(name string) (App, bool) {
	for _, a := range Apps {
		if a.Name == name {
			return a, true
		}
	}
	return App{}, false
}

// ModelName is the profile model serving module m of app a ("lv/face-recognition" shares the
// face stand-in with tm's, but each app gets its own model name so profiles can diverge).
func ModelName(m Module) string { return m.Name }

// DefaultRateRPS is the mean request rate the bundled workload provisions for.
const DefaultRateRPS = 150

// Workload returns the four applications as a pipeline workload at rate rps each.
func Workload(rps float64) *formats.Workload {
	w := &formats.Workload{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindWorkload},
		Metadata: formats.Metadata{Name: "pard-apps", Description: "PARD's four pipeline applications (tm, lv, ga, da) on stand-in profiles"}}
	for _, a := range Apps {
		pardsec.SetPipelines(w, append(pardsec.PipelinesOf(w), Pipeline(a, rps)))
	}
	return w
}

// Pipeline converts a bundled application to the workload format.
func Pipeline(a App, rps float64) pardsec.Pipeline {
	pl := pardsec.Pipeline{Name: a.Name, SLO: formats.Duration(a.SLO), RateRPS: rps}
	for _, m := range a.Modules {
		fm := pardsec.Module{Name: m.Name, Model: ModelName(m)}
		for _, u := range m.After {
			fm.After = append(fm.After, pardsec.Edge{Module: u})
		}
		pl.Modules = append(pl.Modules, fm)
	}
	return pl
}

// Profile returns the stand-in profile: one model per distinct module name, one block,
// batches 1..MaxBatch on GPU.
func Profile() *formats.Profile {
	p := &formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindProfile},
		Metadata: formats.Metadata{Name: "pard-standins", Description: "linear stand-in profiles d(b) = a + c*b ms (PARD spec §6)"}}
	seen := map[string]bool{}
	for _, a := range Apps {
		for _, m := range a.Modules {
			if seen[ModelName(m)] {
				continue
			}
			seen[ModelName(m)] = true
			mp := formats.ModelProfile{Name: ModelName(m), Backend: "import", Source: fmt.Sprintf("stand-in %s: %g + %g*b ms", m.Type.Name, m.Type.A, m.Type.C),
				MemoryBytes: 256 << 20, Blocks: []formats.Block{{FirstLayer: 0, EndLayer: 1}}, CutBytes: []int64{}}
			for b := 1; b <= MaxBatch; b++ {
				mp.Latency = append(mp.Latency, formats.LatencyEntry{GPU: GPU, VGPU: 1, Batch: b,
					BlockUs: []float64{1000 * (m.Type.A + m.Type.C*float64(b))}})
			}
			p.Models = append(p.Models, mp)
		}
	}
	return p
}

// Cluster returns the stand-in cluster: the paper's 64 one-GPU workers (16 machines × 4
// RTX 2080Ti).
func Cluster() *formats.Cluster {
	return &formats.Cluster{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindCluster},
		Metadata: formats.Metadata{Name: "pard-testbed", Description: "16 machines x 4 RTX 2080Ti (PARD's testbed)"},
		GPUs:     []formats.GPUPool{{Type: GPU, Count: 64, PerServer: 4, VGPU: []int{1}, MemoryBytes: 11 << 30}},
		NICGbps:  10}
}
