package solver

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

// fileLP is max x + y s.t. x + 2y <= 4, 3x + y <= 6: the LP optimum is (1.6, 1.2) = 2.8,
// the integer one 2.
const fileLP = `Maximize
 obj: x + y
Subject To
 c1: x + 2 y <= 4
 c2: 3 x + y <= 6
General
 x y
End
`

func TestSolveFile(t *testing.T) {
	for _, kind := range engineKinds {
		cases := []struct {
			name, file, data string
			opts             FileOptions
			obj              float64
			err              error
			want             string // in the error
		}{
			{name: "milp", file: "m.lp", data: fileLP, obj: 2},
			{name: "relaxation", file: "m.lp", data: fileLP, opts: FileOptions{Relax: true, Presolve: "off"}, obj: 2.8},
			{name: "time limit and gap", file: "m.lp", data: fileLP, opts: FileOptions{TimeLimit: 1e9, RelGap: 1e-6}, obj: 2},
			{name: "no heuristics", file: "m.lp", data: fileLP, opts: FileOptions{NoHeuristics: true}, obj: 2},
			{name: "extension", file: "m.txt", data: fileLP, err: ErrInvalidModel, want: `m.txt: want a .lp or .mps file, not ".txt"`},
			{name: "unreadable", file: "bad.lp", data: "Minimize\n obj: x\nSubject To\n r: 1 <= x <= 2\nEnd\n", err: ErrInvalidModel, want: "bad.lp"},
			{name: "presolve", file: "m.lp", data: fileLP, opts: FileOptions{Presolve: "fast"}, err: ErrInvalidModel, want: `presolve "fast"`},
			{name: "negative gap", file: "m.lp", data: fileLP, opts: FileOptions{RelGap: -1}, err: ErrInvalidModel, want: "gap"},
			{name: "engine", file: "m.lp", data: fileLP, opts: FileOptions{Engine: "gpu"}, err: ErrBackendUnavailable, want: "gpu"},
			{name: "highs options", file: "m.lp", data: fileLP, opts: FileOptions{HighsOptions: []string{"random_seed=3", "mip_rel_gap = 0"}}, obj: 2},
			// Set last, so it overrides: HiGHS solves the relaxation although Relax is off.
			{name: "highs option applied", file: "m.lp", data: fileLP, opts: FileOptions{HighsOptions: []string{"solve_relaxation=true"}}, obj: 2.8},
			{name: "unknown highs option", file: "m.lp", data: fileLP, opts: FileOptions{HighsOptions: []string{"no_such_option=1"}}, err: ErrInvalidOption, want: "no_such_option=1"},
			{name: "highs option value", file: "m.lp", data: fileLP, opts: FileOptions{HighsOptions: []string{"mip_rel_gap=abc"}}, err: ErrInvalidOption, want: "mip_rel_gap=abc"},
			{name: "highs option without value", file: "m.lp", data: fileLP, opts: FileOptions{HighsOptions: []string{"random_seed"}}, err: ErrInvalidOption, want: `"random_seed"`},
		}
		t.Run(kind, func(t *testing.T) {
			needEngine(t, kind)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					if c.opts.Engine == "" {
						c.opts.Engine = kind
					}
					res, err := SolveFile(context.Background(), c.file, []byte(c.data), c.opts)
					if c.err != nil {
						if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.want) {
							t.Fatalf("err = %v, want %v containing %q", err, c.err, c.want)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if res.Status != "optimal" || math.Abs(res.Objective-c.obj) > 1e-9 || res.Engine != kind || res.Source == "" {
						t.Fatalf("got %+v, want optimal %g on %s", res, c.obj, kind)
					}
					if c.opts.Relax && (res.Iterations == 0 || res.Nodes != 0 || res.Gap != 0) {
						t.Errorf("relaxation: %+v, want simplex iterations and no MIP search", res)
					}
				})
			}
		})
	}
}

func TestSolveFileLog(t *testing.T) {
	for _, kind := range engineKinds {
		t.Run(kind, func(t *testing.T) {
			needEngine(t, kind)
			var log strings.Builder
			if _, err := SolveFile(context.Background(), "m.lp", []byte(fileLP), FileOptions{Engine: kind, Log: &log}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(log.String(), "Running HiGHS") || !strings.Contains(log.String(), "m") {
				t.Fatalf("log = %q, want HiGHS's log of the run", log.String())
			}
			log.Reset()
			if _, err := SolveFile(context.Background(), "m.lp", []byte(fileLP), FileOptions{Engine: kind}); err != nil {
				t.Fatal(err)
			}
			if log.Len() != 0 {
				t.Fatalf("a run without Log wrote %q to the last one's writer", log.String())
			}
		})
	}
}

func TestParseHighsOption(t *testing.T) {
	cases := []struct {
		in, name, value string
		ok              bool
	}{
		{"random_seed=3", "random_seed", "3", true},
		{" mip_rel_gap = 0.01 ", "mip_rel_gap", "0.01", true},
		{"solution_file=", "solution_file", "", true},
		{"presolve=off=on", "presolve", "off=on", true},
		{"random_seed", "", "", false},
		{"=3", "", "", false},
		{"random seed=3", "", "", false},
		{"", "", "", false},
	}
	for _, c := range cases {
		name, value, err := ParseHighsOption(c.in)
		if c.ok != (err == nil) || name != c.name || value != c.value {
			t.Errorf("ParseHighsOption(%q) = %q, %q, %v; want %q, %q, ok %v", c.in, name, value, err, c.name, c.value, c.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidOption) {
			t.Errorf("ParseHighsOption(%q): %v is not ErrInvalidOption", c.in, err)
		}
	}
}
