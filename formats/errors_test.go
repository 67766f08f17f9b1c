package formats

import (
	"fmt"
	"strings"
	"testing"
)

// TestErrorListCut: a rendered list shows MaxListedProblems problems and
// counts the rest (48k duplicate names printed 48,219 lines through check and simulate).
func TestErrorListCut(t *testing.T) {
	list := func(n int) ErrorList {
		l := make(ErrorList, n)
		for i := range l {
			l[i] = &FieldError{File: "p.json", Path: idx("gpus", i), Rule: "duplicate GPU type"}
		}
		return l
	}
	cases := []struct {
		n     int
		lines int
		last  string
	}{
		{1, 1, "p.json: gpus[0]: duplicate GPU type"},
		{MaxListedProblems, MaxListedProblems, fmt.Sprintf("p.json: gpus[%d]: duplicate GPU type", MaxListedProblems-1)},
		{MaxListedProblems + 1, MaxListedProblems + 1, "... and 1 more problem"},
		{48219, MaxListedProblems + 1, fmt.Sprintf("... and %d more problems", 48219-MaxListedProblems)},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.n), func(t *testing.T) {
			lines := strings.Split(list(c.n).Error(), "\n")
			if len(lines) != c.lines || lines[len(lines)-1] != c.last {
				t.Errorf("%d lines ending %q, want %d ending %q", len(lines), lines[len(lines)-1], c.lines, c.last)
			}
		})
	}
}
