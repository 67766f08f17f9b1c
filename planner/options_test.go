package planner

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
)

type testFlags struct {
	Name  string           `json:"name"`
	N     int              `json:"n"`
	X     float64          `json:"x,omitempty"`
	On    bool             `json:"on"`
	Limit formats.Duration `json:"limit"`
	Skip  int              `json:"-"`
}

// TestReadOptions: typed objects are read strictly; the string maps plans recorded before
// the options were typed are read by the field types, their unknown keys ignored.
func TestReadOptions(t *testing.T) {
	def := testFlags{Name: "def", N: 7, On: true}
	for _, c := range []struct {
		name, raw string
		want      testFlags
		err       string
	}{
		{"absent", ``, def, ""},
		{"null", `null`, def, ""},
		{"typed", `{"name": "a", "n": 3, "x": 0.5, "on": false, "limit": "1m0s"}`, testFlags{Name: "a", N: 3, X: 0.5, Limit: formats.Duration(time.Minute)}, ""},
		{"typed partial", `{"n": 3}`, testFlags{Name: "def", N: 3, On: true}, ""},
		{"legacy", `{"name": "3", "n": "3", "x": "0.5", "on": "false", "limit": "1m0s", "rule": "a description"}`, testFlags{Name: "3", N: 3, X: 0.5, Limit: formats.Duration(time.Minute)}, ""},
		{"typed unknown", `{"n": 3, "m": 4}`, def, `unknown field "m"`},
		{"typed wrong type", `{"n": 3.5}`, def, "provenance.options.n: a JSON number 3.5: must be int"},
		{"mixed", `{"n": "3", "on": true}`, def, "provenance.options.n: a JSON string: must be int"},
		{"legacy not a number", `{"n": "three"}`, def, `provenance.options.n: "three": not a valid int`},
		{"legacy bad duration", `{"limit": "soon"}`, def, "provenance.options"},
		{"not an object", `[1, 2]`, def, "provenance.options"},
	} {
		got := def
		err := ReadOptions(json.RawMessage(c.raw), &got)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		case c.err == "" && got != c.want:
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestRecordOptionsRoundTrip: what RecordOptions writes, ReadOptions reads back.
func TestRecordOptionsRoundTrip(t *testing.T) {
	in := testFlags{Name: "x", N: -2, X: 1e-3, On: true, Limit: formats.Duration(90 * time.Second), Skip: 5}
	raw := RecordOptions(in)
	if strings.Contains(string(raw), "Skip") || !strings.Contains(string(raw), `"limit":"1m30s"`) {
		t.Errorf("recorded %s", raw)
	}
	var out testFlags
	if err := ReadOptions(raw, &out); err != nil {
		t.Fatal(err)
	}
	in.Skip = 0
	if out != in {
		t.Errorf("round trip: %+v, want %+v", out, in)
	}
}
