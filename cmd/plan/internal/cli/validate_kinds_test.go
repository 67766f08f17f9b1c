package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/planner/schedule"
)

// TestValidateRoundTripOtherKinds: the files import validation and solve --window write
// validate as their kind, and read back and rewritten are byte-identical; a broken one names
// the field.
func TestValidateRoundTripOtherKinds(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	csv := filepath.Join(dir, "recs.csv")
	if err := os.WriteFile(csv, []byte("sample,model,pred,cert,label\n0,m,a,0.9,a\n1,m,b,0.8,a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recs := filepath.Join(dir, "recs.json")
	sched := filepath.Join(dir, "schedule.json")
	for _, args := range [][]string{
		{"import", "validation", csv, "-o", recs},
		{"solve", "-q", "--objective", "cost", "--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/cost/cluster-priced.yaml",
			"--workload", "testdata/cost/workload.yaml", "--trace", "testdata/schedule/toy-3windows.csv", "--window", "2m", "-o", sched},
	} {
		if code, stderr := runTB(args...); code != ExitOK {
			skipWithoutHiGHS(t, stderr)
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	rewrite := map[string]func([]byte) ([]byte, error){
		recs: func(b []byte) ([]byte, error) {
			r, err := cascadesec.ImportValidation(recs, b, "")
			if err != nil {
				return nil, err
			}
			return cascadesec.ValidationRecordsJSON(r)
		},
		sched: func(b []byte) ([]byte, error) {
			s, err := schedule.Decode(sched, b)
			if err != nil {
				return nil, err
			}
			return s.Marshal()
		},
	}
	for path, kind := range map[string]string{recs: "ValidationRecords", sched: "Schedule"} {
		var out bytes.Buffer
		code := Run([]string{"validate", path}, Streams{In: strings.NewReader(""), Out: &out, Err: &out})
		if code != ExitOK || !strings.Contains(out.String(), "ok ("+kind+")") {
			t.Fatalf("validate %s: exit %d: %s", kind, code, out.String())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		again, err := rewrite[path](b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(bytes.TrimSpace(again), bytes.TrimSpace(b)) {
			t.Errorf("%s: read and rewritten differs from what was written", kind)
		}
	}
	// Broken: a record without label or correct; a window's embedded plan of another kind.
	b, _ := os.ReadFile(recs)
	bad := filepath.Join(dir, "bad-recs.json")
	os.WriteFile(bad, bytes.Replace(b, []byte(`"label": "a"`), []byte(`"label": ""`), 1), 0o644)
	b, _ = os.ReadFile(sched)
	badSched := filepath.Join(dir, "bad-schedule.json")
	os.WriteFile(badSched, bytes.Replace(b, []byte(`"kind": "Plan"`), []byte(`"kind": "Plot"`), 1), 0o644)
	for path, want := range map[string]string{bad: "must set label or correct", badSched: `.plan: kind: "Plot"`} {
		code, stderr := runTB("validate", path)
		if code != ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("validate %s: exit %d, stderr %q; want exit %d naming %q", filepath.Base(path), code, stderr, ExitUsage, want)
		}
	}
}
