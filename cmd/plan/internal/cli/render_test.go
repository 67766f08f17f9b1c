package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/internal/run"
)

// TestWriteTableLayout pins the table layout to what tablewriter v0.0.5 printed (the fixtures
// were rendered by it before the v1 upgrade): the upgrade must not change a
// single byte of a non-empty table, wide runes (µ, Σ, ½) included.
func TestWriteTableLayout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header []string
		rows   [][]string
	}{
		{"unicode", []string{"model", "device", "block µs", "Σ2·d"}, [][]string{
			{"resnet50", "L4", "12.5", "x"},
			{"a-very-long-model-name", "", "1", "later½"},
			{"m", "A100", "", ""},
		}},
		{"two_columns", []string{"requests", "count"}, [][]string{{"ok", "3"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", "table", tc.name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			run.WriteTable(&got, tc.header, tc.rows)
			if got.String() != string(want) {
				t.Errorf("table layout changed:\ngot:\n%q\nwant:\n%q", got.String(), want)
			}
		})
	}
}
