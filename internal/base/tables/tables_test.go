package tables

import (
	"bytes"
	"testing"
)

// TestDashNote: a line names each column with a "-" (whole or one part of "a/b") and its
// reason, in header order; no dash, or a dash in a column without a reason, prints nothing.
func TestDashNote(t *testing.T) {
	header := []string{"name", "ttft p50/p99", "util", "note"}
	why := map[string]string{"ttft p50/p99": "no sample", "util": "no GPU in use"}
	cases := []struct {
		name string
		rows [][]string
		want string
	}{
		{"none", [][]string{{"a", "1.0/2.0", "50%", ""}}, ""},
		{"whole cell", [][]string{{"a", "1.0/2.0", "-", ""}}, "-  util: no GPU in use\n"},
		{"part of a cell and whole", [][]string{{"a", "-/2.0", "50%", ""}, {"b", "1/2", "-", ""}}, "-  ttft p50/p99: no sample; util: no GPU in use\n"},
		{"negative number is no dash", [][]string{{"a", "-1.5/2.0", "50%", ""}}, ""},
		{"column without a reason", [][]string{{"-", "1/2", "5%", "-"}}, ""},
	}
	for _, c := range cases {
		var b bytes.Buffer
		DashNote(&b, header, c.rows, why)
		if b.String() != c.want {
			t.Errorf("%s: %q, want %q", c.name, b.String(), c.want)
		}
	}
}
