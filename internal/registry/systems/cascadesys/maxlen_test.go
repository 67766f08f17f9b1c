package cascadesys

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/internal/base/optflag"
	"github.com/plan-dev/plan/planner"
	pc "github.com/plan-dev/plan/planner/cascade"
)

// tableInputs is a candidates table over BERT's stand-ins whose longest cascade has 4 models.
func tableInputs() planner.Inputs {
	c := cascadesec.Cascade{Name: "long", Models: pc.BERT.Names(), QPSMax: 2000, QPSRanges: 4,
		LatencySLO: &cascadesec.LatencySLO{Percentile: 0.95, Latency: formats.Duration(400 * time.Millisecond)}}
	for i, m := range pc.BERT.Models {
		c.Candidates = append(c.Candidates, cascadesec.CascadeCandidate{Models: []string{m.Name}, Accuracy: 0.80 + 0.01*float64(i), Reach: []float64{1}})
	}
	c.Candidates = append(c.Candidates,
		cascadesec.CascadeCandidate{Models: []string{"bert-tiny", "bert-small", "bert-base"}, Thresholds: []float64{0.5, 0.4}, Accuracy: 0.850, Reach: []float64{1, 0.4, 0.2}},
		cascadesec.CascadeCandidate{Models: []string{"bert-tiny", "bert-mini", "bert-small", "bert-base"}, Thresholds: []float64{0.5, 0.4, 0.3}, Accuracy: 0.855, Reach: []float64{1, 0.4, 0.25, 0.15}})
	w := cascadesec.SetCascades(&formats.Workload{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindWorkload}, Metadata: formats.Metadata{Name: "long"}}, []cascadesec.Cascade{c})
	return planner.Inputs{Workload: w, Profiles: []*formats.Profile{pc.BERT.Profile()}, Cluster: pc.BERT.Cluster(2, 2)}
}

// TestMaxLen: cascades longer than 3 models are never dropped silently: a candidates table is
// searched whole unless --max-len is given, a --max-len below its longest cascade is refused
// naming the candidate, and over records --max-len above 3 is refused naming the limit.
func TestMaxLen(t *testing.T) {
	tests := []struct {
		name    string
		table   bool
		args    []string
		want    string // error; "" = solves
		maxLen  int    // recorded max_len of the plan
		longest int    // longest planned cascade
	}{
		{"table, default", true, nil, "", 4, 4},
		{"table, --max-len 4", true, []string{"--max-len", "4"}, "", 4, 4},
		{"table, --max-len 3 cuts", true, []string{"--max-len", "3"},
			"workload: cascades[0].candidates[6].models: 4 models: longer than --max-len 3, which would drop it from the search (give --max-len 4", 0, 0},
		{"records, --max-len 4", false, []string{"--max-len", "4"}, "--max-len: 4: must be 1, 2 or 3: the search over validation records enumerates cascades of up to 3 models", 0, 0},
		{"records, --max-len -1", false, []string{"--max-len", "-1"}, "--max-len: -1: must be >= 0", 0, 0},
		{"records, default", false, nil, "", 3, 3},
		{"records, --max-len 0 is the default", false, []string{"--max-len", "0"}, "", 3, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tableInputs()
			if !tc.table {
				in = inputs(t)
			}
			pl := &Planner{f: pc.DefaultFlags()}
			fs := pflag.NewFlagSet("solve", pflag.ContinueOnError)
			optflag.Bind(fs, pl.Options())
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			plan, err := pl.Solve(context.Background(), in, planner.Settings{Deterministic: true})
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, planner.ErrInput) {
					t.Fatalf("err %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var rec pc.Flags
			if err := planner.ReadOptions(plan.Provenance.Options, &rec); err != nil || rec.MaxLen != tc.maxLen {
				t.Errorf("recorded max_len %d (%v), want %d", rec.MaxLen, err, tc.maxLen)
			}
			longest := 0
			for _, g := range cascadesec.PlanOf(plan).Gears {
				longest = max(longest, len(g.Models))
			}
			if longest != tc.longest {
				t.Errorf("longest planned cascade %d, want %d", longest, tc.longest)
			}
			// the recorded options re-solve to the same plan (plan check --resolve)
			re, err := (Checker{}).Resolve(context.Background(), plan, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range (Checker{}).Compare(re, plan, 0) {
				if !c.OK {
					t.Errorf("resolve: %s", c.Line)
				}
			}
		})
	}
}
