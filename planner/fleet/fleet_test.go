package fleet

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/pardsec"
)

// TestRecordAvailable: a cost plan whose GPUs of a type exceed the cluster's available count
// is refused (naming the type, the count available and the count used), never recorded;
// within it, or with no count given, it is recorded.
func TestRecordAvailable(t *testing.T) {
	for _, tc := range []struct {
		name      string
		available *int
		workers   int
		want      string // "" = recorded
	}{
		{"within", new(3), 3, ""},
		{"unbounded", nil, 30, ""},
		{"beyond", new(12), 13, "gpus[type=L4].available: 12: the plan uses 13"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			price := 0.56
			c := &formats.Cluster{GPUs: []formats.GPUPool{{Type: "L4", Count: 4, PricePerHour: &price, Available: tc.available}}}
			p := pardsec.SetPlan(&formats.Plan{}, &pardsec.PARDPlan{Apps: []pardsec.PARDApp{{Name: "a", Modules: []pardsec.ModulePlan{{Name: "m", GPU: "L4", Workers: tc.workers}}}}})
			err := Record(p, c)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Record: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Record: %v, want an error naming %q", err, tc.want)
			case tc.want != "" && p.Fleet != nil:
				t.Errorf("fleet recorded: %+v", p.Fleet)
			}
		})
	}
}
