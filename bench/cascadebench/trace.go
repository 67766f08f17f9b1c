// Package cascadebench is `plan bench cascade`: CascadeServe's evaluation (§6) on
// stand-ins — the BERT and Llama set-ups with seeded latent-difficulty validation and test
// sets, arrival rates shaped by a per-second trace scaled to the paper's peaks (the paper's
// Twitter-derived series with --trace FILE, else a documented synthetic shape of plan's own:
// the series has no license, so it is not shipped), GPUs needed per target for CascadeServe and the
// baselines (Cocktail+ both as the paper's oracle autoscaler and replayed with its runtime
// policy and model-load delays), accuracy vs p95 per GPU count, the degradation runs of
// Figs. 8/9 (more load than planned, slower GPUs, a lost GPU) with their plots, and planner
// time vs exhaustive search — side by side with the paper's numbers.
package cascadebench

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// ReadQPS reads one per-second rate per line (blank lines and # comments skipped).
func ReadQPS(path string) ([]float64, error) {
	// The guarded reader of every file-taking flag.
	data, err := formats.ReadBytes(path)
	if err != nil {
		return nil, err
	}
	return ParseQPS(path, data)
}

// ParseQPS parses a per-second rate series; every problem names the file and line.
func ParseQPS(name string, data []byte) ([]float64, error) {
	var out []float64
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f >= 0) || f > 1e9 {
			return nil, fmt.Errorf("%s: line %d: %q: must be a rate >= 0", name, line, s)
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no rates", name)
	}
	return out, nil
}

// Scale multiplies a series so its peak is peak.
func Scale(q []float64, peak float64) []float64 {
	m := 0.0
	for _, x := range q {
		m = max(m, x)
	}
	out := make([]float64, len(q))
	for i, x := range q {
		out[i] = x * peak / m
	}
	return out
}

// Histogram is the fraction of time at each integer QPS (the workload's qps_histogram).
func Histogram(q []float64) []float64 {
	m := 0
	for _, x := range q {
		m = max(m, int(x))
	}
	h := make([]float64, m+1)
	for _, x := range q {
		h[int(x)] += 1 / float64(len(q))
	}
	return h
}
