package formats

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats/jsonx"
)

// allocatedBy returns the bytes allocated while f runs.
func allocatedBy(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestHostileNesting: a document nested far deeper than any plan file (240 KB of brackets
// under a valid header; 1.65 GB of memory before the gate) is refused at level 65, naming
// the file, the field and the line, for a few bytes per input byte; YAML nesting too.
func TestHostileNesting(t *testing.T) {
	const depth = 120_000
	for _, c := range []struct {
		name, doc, want string
	}{
		{"JSON arrays", `{"apiVersion": "plan/v1", "kind": "Plan", "x": ` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`,
			"p.json: x" + strings.Repeat("[0]", 63) + ": nested deeper than 64 levels at byte 110 (line 1)"},
		{"JSON objects", `{"apiVersion": "plan/v1", "kind": "Plan", "x": ` + strings.Repeat(`{"a":`, depth/3) + "1" + strings.Repeat("}", depth/3) + `}`,
			"p.json: x" + strings.Repeat(".a", 63) + ": nested deeper than 64 levels"},
		{"YAML flow", "apiVersion: plan/v1\nkind: Plan\nx: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n",
			"p.json: invalid YAML: line 3: nested deeper than 64 levels"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			n := allocatedBy(func() { _, err = Decode("p.json", []byte(c.doc), inTree) })
			ratio := float64(n) / float64(len(c.doc))
			t.Logf("%d bytes in, %d bytes allocated: %.2f× the input", len(c.doc), n, ratio)
			if !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant %q", err, c.want)
			}
			if ratio > jsonx.MemoryFactor+1 {
				t.Errorf("allocated %.2f× the input, want at most %d×", ratio, jsonx.MemoryFactor+1)
			}
		})
	}
}

// TestEchoedInputBounded: what an error repeats of the input — a file name, a value, a key —
// is quoted when it would not print as itself and cut to 200 bytes: a newline in a file
// name cannot forge a line of the output, a 200 KB value is not sent back.
func TestEchoedInputBounded(t *testing.T) {
	big := strings.Repeat("v", 200_000)
	for _, c := range []struct {
		name, file, doc string
		want            []string
	}{
		{"newline in the file name", "a.json\nfake.json: all good", `{"apiVersion": "plan/v1", "kind": "Nope"}`,
			[]string{`"a.json\nfake.json: all good": kind: "Nope": must be one of`}},
		{"200 KB value", "c.json", `{"apiVersion": "plan/v1", "kind": "` + big + `"}`,
			[]string{`c.json: kind: "` + strings.Repeat("v", 200) + `"… (200000 bytes): must be one of`}},
		{"200 KB key", "c.json", `{"apiVersion": "plan/v1", "kind": "Cluster", "` + big + `": 1}`,
			[]string{`c.json: ["` + strings.Repeat("v", 200) + `"… (200000 bytes)]: unknown field`}},
		{"200 KB file name", strings.Repeat("f", 300) + ".json", `{"apiVersion": "plan/v1", "kind": "Nope"}`,
			[]string{`"` + strings.Repeat("f", 200) + `"… (305 bytes): kind`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.file, []byte(c.doc), inTree)
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%.600s", w, msg)
				}
			}
			if strings.Count(msg, "\n") != strings.Count(strings.TrimSpace(msg), "\n") || len(msg) > 2000 {
				t.Errorf("message of %d bytes:\n%.600s", len(msg), msg)
			}
			for _, line := range strings.Split(msg, "\n") {
				if strings.HasPrefix(line, "fake.json") {
					t.Errorf("a forged line: %q", line)
				}
			}
		})
	}
	if got := (&ReadError{Path: "x\ny", Err: ErrNotText}).Error(); !strings.HasPrefix(got, `"x\ny": cannot read`) {
		t.Errorf("read error: %q", got)
	}
}
