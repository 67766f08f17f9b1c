// Package qlmbench is `plan bench qlm`: QLM's evaluation (spec §5) replayed in the simulator
// on the Azure LLM inference traces (../shared/data/azure-llm-2023-*.csv, read at run time):
// arrival times and prompt/output token counts come from the trace, compressed in time to
// scale the rate; every request is latency-sensitive (20 s end-to-end SLO) with the given
// share, the rest batch (10 min). It reports SLO attainment per class and throughput for QLM,
// every baseline and the ablations side by side with the paper's directions.
package qlmbench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/dataplane"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/sim"
)

// DefaultTrace is the Azure conversation trace.
const DefaultTrace = "../shared/data/azure-llm-2023-conv.csv"

// Command is `plan bench qlm`.
type Command struct {
	quick    bool
	trace    string
	profile  string
	speedup  float64
	share    float64
	minutes  float64
	policies []string
}

// Name implements bench.Bench.
func (o *Command) Name() string { return "qlm" }

// Short implements bench.Bench.
func (o *Command) Short() string {
	return "QLM vs vLLM-FCFS, EDF, round-robin/random assignment and ablations on the Azure LLM trace"
}

// Long implements bench.Bench.
func (o *Command) Long() string {
	return `Replays the Azure LLM inference trace (` + DefaultTrace + `, read at run time) against two
A100 instances serving Mistral-7B (W_B, single model, spec §5) from the bundled profile
(testdata/qlm/profile.json). Arrival times are the trace's, compressed by --speedup to raise
the rate; prompt and output lengths are the trace's. A --share of requests (every k-th) is
latency-sensitive (20 s end-to-end SLO), the rest batch (10 min). Prints, per policy, SLO
attainment of each class, throughput and the wall time of the replay. Paper (Fig. 9-10):
QLM +40-90% SLO attainment over vLLM, ahead of EDF; throughput +20% over vLLM and EDF.
--quick: the first 3 minutes of virtual time.`
}

// Example implements bench.Bench.
func (o *Command) Example() string {
	return "  plan bench qlm --quick\n  plan bench qlm --minutes 60 --speedup 4"
}

// Flags implements bench.Bench.
func (o *Command) Flags(f *pflag.FlagSet) {
	f.BoolVar(&o.quick, "quick", false, "first 3 minutes of virtual time (under 2 minutes)")
	f.StringVar(&o.trace, "trace", DefaultTrace, "Azure LLM trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens)")
	f.StringVar(&o.profile, "profile", "testdata/qlm/profile.json", "LLM profile (mistral-7b on A100)")
	f.Float64Var(&o.speedup, "speedup", 4, "time compression of the trace (rate multiplier)")
	f.Float64Var(&o.share, "share", 0.2, "share of latency-sensitive requests")
	f.Float64Var(&o.minutes, "minutes", 10, "minutes of virtual time replayed")
	f.StringSliceVar(&o.policies, "policies", nil, "policies (default: all QLM-kind policies)")
}

type row struct {
	t       dataplane.Time
	in, out int32
}

// Load reads the trace.
func Load(path string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(path, f)
}

// Parse decodes an Azure LLM trace (TIMESTAMP,ContextTokens,GeneratedTokens with a header
// line), rejecting malformed lines and decreasing timestamps with the line number.
func Parse(path string, r io.Reader) ([]row, error) {
	sc := bufio.NewScanner(r)
	var rows []row
	var t0 time.Time
	line := 0
	for sc.Scan() {
		line++
		if line == 1 {
			continue
		}
		parts := strings.Split(sc.Text(), ",")
		if len(parts) != 3 {
			return nil, fmt.Errorf("%s:%d: want 3 fields, got %d", path, line, len(parts))
		}
		ts, err := time.Parse("2006-01-02 15:04:05.9999999", parts[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: TIMESTAMP %q: %v", path, line, parts[0], err)
		}
		in, err1 := strconv.Atoi(parts[1])
		out, err2 := strconv.Atoi(parts[2])
		if err1 != nil || err2 != nil || in < 1 || out < 1 {
			return nil, fmt.Errorf("%s:%d: token counts %q, %q: must be integers >= 1", path, line, parts[1], parts[2])
		}
		if line == 2 {
			t0 = ts
		}
		if len(rows) > 0 && ts.Sub(t0).Microseconds() < int64(rows[len(rows)-1].t) {
			return nil, fmt.Errorf("%s:%d: TIMESTAMP %q: earlier than the previous line", path, line, parts[0])
		}
		rows = append(rows, row{t: dataplane.Time(ts.Sub(t0).Microseconds()), in: int32(min(in, 8192)), out: int32(min(out, 2048))})
	}
	return rows, sc.Err()
}

// Result is one policy's outcome.
type Result struct {
	Policy                 string
	Requests               int
	Interactive, Batch     float64 // SLO attainment
	ThroughputRPS, WallSec float64
	// Counters of the serving operations and the plan generator.
	Evictions, KVSwaps, ModelSwaps, Replans, Fallbacks int64
}

// Run implements bench.Bench.
func (o *Command) Run(_ context.Context, env bench.Env) error {
	if o.speedup <= 0 || o.share < 0 || o.share > 1 || o.minutes <= 0 {
		return bench.Usagef("--speedup must be > 0, --share in [0, 1], --minutes > 0")
	}
	if o.quick {
		o.minutes = 3
	}
	rows, err := Load(o.trace)
	if err != nil {
		return err
	}
	pr, err := formats.ReadInto[*formats.Profile](o.profile)
	if err != nil {
		return err
	}
	res, err := Replay(rows, pr.LLMs, o.speedup, o.share, dataplane.Time(o.minutes*60)*dataplane.Second, o.policies)
	if err != nil {
		return err
	}
	var tab [][]string
	for _, r := range res {
		tab = append(tab, []string{r.Policy, strconv.Itoa(r.Requests), fmt.Sprintf("%.1f%%", 100*r.Interactive), fmt.Sprintf("%.1f%%", 100*r.Batch),
			fmt.Sprintf("%.2f", r.ThroughputRPS), fmt.Sprintf("%.2f", r.WallSec), fmt.Sprintf("%d/%d", r.Evictions, r.KVSwaps), fmt.Sprintf("%d/%d", r.Replans, r.Fallbacks)})
	}
	if env.JSON {
		return env.WriteJSON(res)
	}
	env.Table([]string{"POLICY", "REQUESTS", "SLO_INTERACTIVE", "SLO_BATCH", "THROUGHPUT_RPS", "WALL_S", "EVICT/SWAP", "REPLANS/FALLBACK"}, tab)
	env.Infof("paper (W_B): QLM +40-90%% SLO attainment over vLLM, above EDF; throughput +20%% over vLLM/EDF\n")
	return nil
}

// Replay runs every policy on the trace window.
func Replay(rows []row, profs []formats.LLMProfile, speedup, share float64, window dataplane.Time, policies []string) ([]Result, error) {
	var inter, batch []dataplane.Time
	var attrs [2][]dataplane.Attrs
	k := 0
	every := 0
	if share > 0 {
		every = int(1/share + 0.5)
	}
	for _, r := range rows {
		t := dataplane.Time(float64(r.t) / speedup)
		if t >= window {
			break
		}
		a := dataplane.Attrs{InTokens: r.in, OutTokens: r.out}
		if every > 0 && k%every == 0 {
			inter = append(inter, t)
			attrs[0] = append(attrs[0], a)
		} else {
			batch = append(batch, t)
			attrs[1] = append(attrs[1], a)
		}
		k++
	}
	tp := formats.TokenProfile{Mean: 1000, Std: 800, Max: 8192}
	op := formats.TokenProfile{Mean: 230, Std: 200, Max: 2048}
	classes := []formats.LLMClass{
		{Name: "interactive", Model: "mistral-7b", SLO: formats.Duration(20 * time.Second), Interactive: true, RateRPS: 1, InputTokens: tp, OutputTokens: op},
		{Name: "batch", Model: "mistral-7b", SLO: formats.Duration(10 * time.Minute), RateRPS: 1, InputTokens: tp, OutputTokens: op},
	}
	dep, err := dq.Build(classes, dq.Setup{Profiles: profs, Instances: []dq.Instance{{Name: "i0", GPU: "A100", Model: "mistral-7b"}, {Name: "i1", GPU: "A100", Model: "mistral-7b"}},
		SolveMs: 20, MaxBinaries: 400})
	if err != nil {
		return nil, err
	}
	reg := dq.Registry()
	if len(policies) == 0 {
		for _, p := range dq.Policies() {
			policies = append(policies, p.Name)
		}
	}
	var out []Result
	for _, name := range policies {
		p, err := reg.New(dep, dataplane.Config{Policy: name}, dq.PolicyQLM)
		if err != nil {
			return nil, bench.Usagef("--policies: %v", err)
		}
		start := time.Now()
		var ok, n [2]int
		var last dataplane.Time
		s, err := sim.New(dep, p, []sim.Source{&sim.Times{T: inter}, &sim.Times{T: batch}}, sim.Options{Duration: window + 1,
			Attrs: func(a dataplane.AppID, i int64) dataplane.Attrs { return attrs[a][i] }, CompactEvery: 1 << 16,
			OnFinish: func(now dataplane.Time, r *dataplane.Request) {
				n[r.App]++
				if r.Outcome == dataplane.Completed {
					ok[r.App]++
				}
				last = now
			}})
		if err != nil {
			return nil, err
		}
		if _, err := s.Run(); err != nil {
			return nil, fmt.Errorf("policy %s: %w", name, err)
		}
		st := p.(*dq.Policy).Stats()
		r := Result{Policy: name, Requests: n[0] + n[1], WallSec: time.Since(start).Seconds(), Evictions: st.Evictions, KVSwaps: st.KVSwaps,
			ModelSwaps: st.ModelSwaps, Replans: st.Replans, Fallbacks: st.PlanFallbacks}
		if n[0] > 0 {
			r.Interactive = float64(ok[0]) / float64(n[0])
		}
		if n[1] > 0 {
			r.Batch = float64(ok[1]) / float64(n[1])
		}
		if last > 0 {
			r.ThroughputRPS = float64(r.Requests) / (float64(last) / 1e6)
		}
		out = append(out, r)
	}
	return out, nil
}
