package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/sim"
)

// TestTraceRequestIDs: a trace request's id reaches the replay's records by trace row;
// requests without one carry none, and a trace without any carries none at all.
func TestTraceRequestIDs(t *testing.T) {
	for _, c := range []struct {
		name string
		reqs []formats.TraceRequest
		want []string
	}{
		{"ids", []formats.TraceRequest{{ID: "req-a"}, {TimeUs: 5}, {TimeUs: 9, ID: "req-c"}}, []string{"req-a", "", "req-c"}},
		{"no ids", []formats.TraceRequest{{TimeUs: 0}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := traceRequestIDs(c.reqs)
			if strings.Join(got, "|") != strings.Join(c.want, "|") || (got == nil) != (c.want == nil) {
				t.Errorf("ids %q, want %q", got, c.want)
			}
		})
	}
	row := func(i int) *int { return &i }
	out := filepath.Join(t.TempDir(), "r.jsonl")
	recs := []sim.RequestRecord{{ID: 0, TraceRow: row(2)}, {ID: 1, TraceRow: row(1)}, {ID: 2}}
	if err := writeEngineRequests(out, recs, []string{"a", "", "c"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.RequestID)
	}
	if strings.Join(ids, "|") != "c||" {
		t.Errorf("record ids %q, want c, none, none", ids)
	}
}
