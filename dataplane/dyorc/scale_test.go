package dyorc

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// spreadDeployment is SpreadDeployment for tests: w on g A800 GPUs, 8 per server.
func spreadDeployment(tb testing.TB, w *Workflow, g int) *dataplane.Deployment {
	tb.Helper()
	dep, err := SpreadDeployment(w, g)
	if err != nil {
		tb.Fatal(err)
	}
	return dep
}
