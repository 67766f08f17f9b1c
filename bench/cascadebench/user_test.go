package cascadebench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	pc "github.com/plan-dev/plan/planner/cascade"
)

// userFiles writes a user's data set: BERT stand-in profiles, per-sample validation and test
// records as CSV (edit changes test record i) and a per-second trace.
func userFiles(t *testing.T, edit func(i int, r *cascadesec.ValidationRecord)) (profile, records, test, trace string) {
	t.Helper()
	dir := t.TempDir()
	profile, records, test, trace = filepath.Join(dir, "profile.json"), filepath.Join(dir, "val.csv"), filepath.Join(dir, "test.jsonl"), filepath.Join(dir, "qps.txt")
	if err := formats.WriteFile(profile, pc.BERT.Profile(), intree.Sections()); err != nil {
		t.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString("sample,model,pred,cert,label\n")
	for _, r := range pc.BERT.Generate(600, 1) {
		fmt.Fprintf(&csv, "%d,%s,%s,%g,%s\n", r.Sample, r.Model, r.Pred, r.Cert, r.Label)
	}
	var jl strings.Builder
	for i, r := range pc.BERT.Generate(600, 2) {
		if edit != nil {
			edit(i, &r)
		}
		fmt.Fprintf(&jl, `{"sample":%d,"model":%q,"pred":%q,"cert":%g,"label":%q}`+"\n", r.Sample, r.Model, r.Pred, r.Cert, r.Label)
	}
	var q strings.Builder
	for s := 0; s < 120; s++ {
		rate := 100.0
		if s >= 60 && s < 64 {
			rate = 400 // a short burst
		}
		fmt.Fprintf(&q, "%g\n", rate)
	}
	for f, data := range map[string]string{records: csv.String(), test: jl.String(), trace: q.String()} {
		if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return
}

// TestUserData: `plan bench cascade --profile F --records F --trace F` runs the comparison on
// the user's data: every system gets a row on the user's set-up; bad
// inputs are usage errors naming the file, field and value.
func TestUserData(t *testing.T) {
	prof, recs, test, trace := userFiles(t, nil)
	var out bytes.Buffer
	env := benchapi.Env{Out: &out, Err: io.Discard, Infof: func(f string, a ...any) { fmt.Fprintf(&out, f+"\n", a...) },
		Table: func(h []string, rows [][]string) {
			fmt.Fprintln(&out, strings.Join(h, "\t"))
			for _, r := range rows {
				fmt.Fprintln(&out, strings.Join(r, "\t"))
			}
		}}
	c := &Command{quick: true, trace: trace, window: 20,
		user: userInput{profile: prof, records: recs, test: test, slo: 400e6, targets: []float64{0.83}, maxGPUs: 2, ranges: 4}}
	if err := c.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"serving replays the test records", "arrival trace: " + trace, "0.830\tcascadeserve\t", "0.830\tdynba\t", "0.830\tms+\t", "0.830\tcocktail+\t"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log("\n" + got)
	}

	_, _, stranger, _ := userFiles(t, func(i int, r *cascadesec.ValidationRecord) {
		if i == 3 {
			r.Model = "gpt"
		}
	})
	bad := []struct {
		name string
		u    userInput
		want string
	}{
		{"records without profile", userInput{records: recs}, "--profile and --records"},
		{"test set with a model the validation set lacks", userInput{profile: prof, records: recs, test: stranger},
			`cascades[0].test[3].model: "gpt": a model the validation set lacks`},
		{"missing profile file", userInput{profile: prof + ".missing", records: recs}, "profile.json.missing"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			tc.u.slo, tc.u.maxGPUs, tc.u.ranges = 400e6, 2, 4
			c := &Command{quick: true, trace: trace, user: tc.u}
			err := c.Run(context.Background(), env)
			if err == nil || !errors.Is(err, bench.ErrUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want a usage error with %q", err, tc.want)
			}
		})
	}
}
