// Package tables holds what every table plan prints shares beyond its layout (run.WriteTable
// renders it): the note under a table that says why some cells are "-". It is a leaf, so the
// commands (internal/run) and the benches (bench) print the same note without one importing
// the other.
package tables

import (
	"fmt"
	"io"
	"strings"
)

// DashNote prints, under a table, why some of its cells are "-", when any is (a cell or one
// part of a cell "a/b/c"): a dash without its reason reads as zero, or as a bug. why maps a
// column's header to the reason its dashes have; the columns are named in header order, on
// one line that starts with "-".
func DashNote(w io.Writer, header []string, rows [][]string, why map[string]string) {
	var notes []string
	for j, h := range header {
		reason, ok := why[h]
		if !ok {
			continue
		}
		for _, r := range rows {
			if j < len(r) && hasDash(r[j]) {
				notes = append(notes, h+": "+reason)
				break
			}
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "-  %s\n", strings.Join(notes, "; "))
	}
}

func hasDash(cell string) bool {
	for _, part := range strings.Split(cell, "/") {
		if part == "-" {
			return true
		}
	}
	return false
}
