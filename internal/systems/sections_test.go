package systems

import (
	"os"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// The rules of a typed section whose validation left formats (issue 29 item 3) run only when
// the registry's set is passed: with the in-tree registry a broken section is refused with
// formats' old message, byte for byte; without a set the read is structural only (the
// documented contract of formats.Validate). The case fails if a system forgets to register
// its Section, which would otherwise let bad files through every production reader.
func TestTypedSectionsRunFromTheRegistry(t *testing.T) {
	cases := []struct {
		name, file string
		kind       string
		from, to   string
		want       string
	}{
		{"dyorc plan", "../../testdata/golden/dyorc-small.json", formats.KindPlan,
			`"replicas": 1`, `"replicas": 0`,
			`dyorc.deployments[0].replicas: 0: must be >= 1`},
		{"dyorc workflows", "../../testdata/dyorc/workload.json", formats.KindWorkload,
			`"max_batch": 64`, `"max_batch": 0`,
			`workflows.services.vit.max_batch: 0: must be >= 1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, err := os.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := formats.DecodeWith("f.json", data, Default().Sections()); err != nil {
				t.Fatalf("good file refused: %v", err)
			}
			bad := []byte(strings.Replace(string(data), c.from, c.to, 1))
			if string(bad) == string(data) {
				t.Fatalf("fixture has no %s", c.from)
			}
			_, err = formats.DecodeWith("f.json", bad, Default().Sections())
			if err == nil || !strings.Contains(err.Error(), "f.json: "+c.want) {
				t.Errorf("with the registry: %v, want %s", err, c.want)
			}
			doc, err := formats.Parse("f.json", bad)
			if err != nil {
				t.Fatal(err)
			}
			if errs := doc.Validate(); len(errs) != 0 {
				t.Errorf("without a set (structural only): %v", errs)
			}
			if got := formats.ValidateWith(doc, Default().Sections()); len(got) != 1 || got[0].Error() != c.want {
				t.Errorf("ValidateWith = %v, want %s", got, c.want)
			}
		})
	}
}
