package export

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/internal/system"
)

func TestExporterFor(t *testing.T) {
	if _, err := exporterFor(system.System{Name: "cascade"}, "kserve"); err == nil || !strings.Contains(err.Error(), "system cascade has no exporter for target kserve") {
		t.Errorf("exporterFor: %v", err)
	}
}
