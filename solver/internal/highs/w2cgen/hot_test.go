package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plan-dev/plan/solver/internal/highs"
)

// body is a function definition of n lines named name, as wasm2c writes it.
func body(name string, n int) []string {
	b := []string{"static u32 " + name + "(Z_highs_instance_t* instance, u32 w2c_p0) {"}
	for range n - 2 {
		b = append(b, "  w2c_p0 += 1;")
	}
	return append(b, "}")
}

func TestAssignParts(t *testing.T) {
	bodies := [][]string{body("w2c_f0", 10), body("w2c_f1", 10), body("w2c_f2", 10), body("w2c_f3", 10), body("w2c_f4", 10), body("w2c_f5", 10)}
	tests := []struct {
		name     string
		parts    int
		hot      map[string]bool
		hotParts int
		want     []int
		err      string
	}{
		{"no list: equal parts in order", 3, nil, 0, []int{0, 0, 1, 1, 2, 2}, ""},
		{"hot first, cold after", 4, map[string]bool{"w2c_f1": true, "w2c_f4": true}, 2, []int{2, 0, 2, 3, 1, 3}, ""},
		{"one hot part", 2, map[string]bool{"w2c_f5": true}, 1, []int{1, 1, 1, 1, 1, 0}, ""},
		{"a listed function not defined", 4, map[string]bool{"w2c_f9": true}, 2, nil, "does not define: w2c_f9"},
		{"no part left for the cold", 2, map[string]bool{"w2c_f1": true}, 2, nil, "-hot-parts 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := assignParts(bodies, tc.parts, tc.hot, tc.hotParts)
			if !errAsWanted(t, err, tc.err) {
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("parts %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReadHotList(t *testing.T) {
	sha := highs.WasmSHA256
	tests := []struct {
		name, text string
		want       []string
		err        string
	}{
		{"names and comments", hotHeader + sha + "\n# a comment\n\nw2c_f21\nw2c_f22\n", []string{"w2c_f21", "w2c_f22"}, ""},
		{"another wasm", hotHeader + strings.Repeat("0", 64) + "\nw2c_f1\n", nil, "run scripts/native-hot.sh"},
		{"no header", "w2c_f1\n", nil, "hot.txt:1"},
		{"not a name", hotHeader + sha + "\nf1\n", nil, `hot.txt:2: "f1"`},
		{"empty", hotHeader + sha + "\n", nil, "no functions listed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hot.txt")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			hot, err := readHotList(path, sha)
			if !errAsWanted(t, err, tc.err) {
				return
			}
			var got []string
			for n := range hot {
				got = append(got, n)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("hot %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBundledHotList: the committed list is for the pinned wasm (w2cgen would refuse it
// otherwise, failing `make native`).
func TestBundledHotList(t *testing.T) {
	hot, err := readHotList("hot.txt", highs.WasmSHA256)
	if err != nil {
		t.Fatal(err)
	}
	if len(hot) < 100 {
		t.Errorf("hot.txt lists %d functions", len(hot))
	}
}

// errAsWanted fails t unless err is nil where want is "" and names want otherwise; it
// reports whether the test goes on (no error was wanted).
func errAsWanted(t *testing.T, err error, want string) bool {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatal(err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("err %v, want one naming %q", err, want)
	}
	return want == ""
}
