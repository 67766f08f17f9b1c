package vllmruns

import (
	"math"
	"strings"
	"testing"
)

// FuzzReadRuns: any bytes given as a runs file are read or refused without panicking; a
// refusal names the file, and what reads is whole runs of finite, positive measurements.
func FuzzReadRuns(f *testing.F) {
	_, data := EmbeddedRuns()
	f.Add(data)
	lines := strings.SplitAfter(string(data), "\n")
	f.Add([]byte(strings.Join(lines[:4], "")))
	f.Add([]byte(lines[0] + strings.Replace(lines[1], "4460.333", "NaN", 1)))
	withUsers := strings.TrimRight(lines[0], "\n") + ",users_per_system_prompt\n"
	for i, l := range lines[1:4] {
		withUsers += strings.TrimRight(l, "\n") + "," + []string{"5", "", "5"}[i] + "\n"
	}
	f.Add([]byte(withUsers))
	f.Fuzz(func(t *testing.T, data []byte) {
		runs, err := ReadRuns("r.csv", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "r.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, r := range runs {
			if len(r.Stages) == 0 || r.TP < 1 || r.OutputTokens < 1 || r.UsersPerSystemPrompt < 0 {
				t.Fatalf("run %q: %d stages, TP %d, %d output tokens", r.ID, len(r.Stages), r.TP, r.OutputTokens)
			}
			for _, m := range append([]Measured{r.All}, stagesMeasured(r)...) {
				for _, v := range []float64{m.E2EMean, m.TTFTMean, m.ITLMean} {
					if !(v > 0) || math.IsInf(v, 0) {
						t.Fatalf("run %q: a measurement %g", r.ID, v)
					}
				}
			}
		}
	})
}

func stagesMeasured(r Run) []Measured {
	var out []Measured
	for _, s := range r.Stages {
		out = append(out, s.Measured)
	}
	return out
}

// FuzzReadSingleStream: as FuzzReadRuns, for the single-stream file.
func FuzzReadSingleStream(f *testing.F) {
	_, data := EmbeddedSingleStream()
	f.Add(data)
	f.Add([]byte("config,model,gpu,tp,weights,prompt_tokens,output_tokens,decode_ms_per_token\na,meta-llama/Llama-3.1-8B-Instruct,H100,1,BF16,500,250,6.257\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ss, err := ReadSingleStream("s.csv", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "s.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, s := range ss {
			if !(s.MeasuredMs > 0) || math.IsInf(s.MeasuredMs, 0) {
				t.Fatalf("%+v", s)
			}
		}
	})
}
