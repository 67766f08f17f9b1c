package export

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/internal/registry/system"
)

func TestExporterFor(t *testing.T) {
	if _, err := exporterFor(bare{}, "kserve"); err == nil || !strings.Contains(err.Error(), "system cascade has no exporter for target kserve") {
		t.Errorf("exporterFor: %v", err)
	}
}

// bare is a system with no extension point: no Exporting.
type bare struct{}

func (bare) Name() string              { return "cascade" }
func (bare) Doc() string               { return "" }
func (bare) Sections() system.Sections { return system.Sections{} }
