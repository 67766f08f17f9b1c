package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestBadInputSLOTraceExportDir: bad input that was taken in silence or refused in a
// library's words, each now exit 2 naming the flag or file and the value up front.
func TestBadInputSLOTraceExportDir(t *testing.T) {
	// A Mooncake line of two million hash_ids, past formats.MaxLineBytes (16 MiB).
	big := filepath.Join(t.TempDir(), "big.jsonl")
	line := append([]byte(`{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [`), bytes.Repeat([]byte("10000000,"), 2_000_000)...)
	line = append(line[:len(line)-1], "]}\n"...)
	if err := os.WriteFile(big, line, 0o644); err != nil {
		t.Fatal(err)
	}
	const qlm = "testdata/qlm/"
	runBadInput(t, []badInputCase{
		// --slo on a QLM placement: the classes keep their own SLOs, so it was ignored.
		{name: "slo on a qlm placement", args: []string{"solve", "-q", "--slo", "1s", "--profile", qlm + "profile.json", "--cluster", qlm + "cluster.yaml",
			"--workload", qlm + "workload.yaml", "-o", "$TMP/plan.json"}, code: ExitUsage,
			want: []string{"--slo: 1s: the qlm planner plans each class for its own slo", "--objective cost"}, out: "plan.json"},
		// The trace formats --trace reads are checked by validate as --trace reads them.
		{name: "validate mooncake trace", args: []string{"validate", "testdata/formats/mooncake/sample.jsonl", "testdata/load/azure.csv"}, code: ExitOK},
		{name: "validate mooncake line too long", args: []string{"validate", big}, code: ExitUsage,
			want: []string{big + ":1: line too long: longer than 16 MiB"}},
		// export -o: the directory is checked before any work, named as given.
		{name: "export to the root", args: []string{"export", "testdata/export/qlm/plan.json", "--to", "kserve", "-o", "/tmp/.."}, code: ExitUsage,
			want: []string{"-o /tmp/..: is the filesystem root"}},
		{name: "export to the current directory", args: []string{"export", "testdata/export/qlm/plan.json", "--to", "kserve", "-o", "."}, code: ExitUsage,
			want: []string{"-o .: is the current directory"}},
		{name: "export above the current directory", args: []string{"export", "testdata/export/qlm/plan.json", "--to", "kserve", "-o", ".."}, code: ExitUsage,
			want: []string{"-o ..: is a directory holding the current directory"}},
		{name: "export under a file", args: []string{"export", "testdata/export/qlm/plan.json", "--to", "kserve", "-o", "go.mod/out"}, code: ExitUsage,
			want: []string{"-o go.mod/out: ", "/go.mod: is not a directory"}},
		{name: "export onto a file", args: []string{"export", "testdata/export/qlm/plan.json", "--to", "kserve", "-o", "go.mod"}, code: ExitUsage,
			want: []string{"-o go.mod: exists and is not a directory"}},
	})
}
