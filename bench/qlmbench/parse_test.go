package qlmbench

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	good := "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n"
	rows, err := Parse("t.csv", strings.NewReader(good))
	if err != nil || len(rows) != 2 || rows[1].t != 4314579 || rows[1].in != 396 || rows[1].out != 109 {
		t.Fatalf("rows %+v err %v", rows, err)
	}
	for _, bad := range []string{
		"h\n2023-11-16 18:15:46.6805900,374\n",
		"h\n2023-11-16 18:15:46.6805900,0,4\n",
		"h\nyesterday,3,4\n",
		"h\n2023-11-16 18:15:50.0,3,4\n2023-11-16 18:15:46.0,3,4\n",
	} {
		if _, err := Parse("t.csv", strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "t.csv:") {
			t.Errorf("%q: err %v, want one naming the line", bad, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n")
	f.Fuzz(func(t *testing.T, s string) {
		rows, err := Parse("f.csv", strings.NewReader(s))
		if err != nil {
			return
		}
		for i, r := range rows {
			if r.in < 1 || r.out < 1 || (i > 0 && r.t < rows[i-1].t) {
				t.Fatalf("row %d: %+v", i, r)
			}
		}
	})
}
