package profile

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
)

// TestProfileWarnsNoisyPoints: plan profile names the points plan solve will leave out of
// its fit and writes the profile as measured.
func TestProfileWarnsNoisyPoints(t *testing.T) {
	for _, c := range []struct {
		file  string
		warns int
	}{{"testdata/cascade/profile.json", 0}, {"testdata/cascade/profile-noisy.json", 2}} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			doc, err := formats.ReadInto[*formats.Profile](filepath.Join("..", "..", "..", c.file), nil)
			if err != nil {
				t.Fatal(err)
			}
			before, _ := formats.Marshal(doc)
			var errb strings.Builder
			warnNoisyPoints(&run.IO{Streams: run.Streams{Err: &errb}}, doc)
			if got := strings.Count(errb.String(), "warning: "); got != c.warns {
				t.Errorf("%d warnings, want %d:\n%s", got, c.warns, errb.String())
			}
			if after, _ := formats.Marshal(doc); string(after) != string(before) {
				t.Error("warning about the fit changed the profile")
			}
		})
	}
}

func TestParseIntList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		bad  bool
	}{
		{"", nil, false},
		{"1-8", []int{1, 2, 3, 4, 5, 6, 7, 8}, false},
		{"4,1,2,2", []int{1, 2, 4}, false},
		{"1-2, 8", []int{1, 2, 8}, false},
		{"3-1", nil, true},
		{"0", nil, true},
		{"1-5000", nil, true},
		{"x", nil, true},
		{"1-", nil, true},
	}
	for _, tc := range tests {
		got, err := parseIntList(tc.in, 1, 4096)
		if (err != nil) != tc.bad || (!tc.bad && !slicesEqual(got, tc.want)) {
			t.Errorf("parseIntList(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func FuzzParseIntList(f *testing.F) {
	for _, s := range []string{"1-8", "1,2,4", "1-4,8", "", "3-1", "-5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseIntList(s, 1, 64)
		if err != nil {
			return
		}
		for i, v := range got {
			if v < 1 || v > 64 || (i > 0 && got[i-1] >= v) {
				t.Fatalf("parseIntList(%q) = %v: out of range or not strictly increasing", s, got)
			}
		}
	})
}
