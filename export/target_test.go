package export

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// toyTarget is a target of its own: it renders Groups as one YAML manifest per unit of a
// kind the shared schemas do not know, supplies that kind's schema and a rule.
type toyTarget struct{}

func (toyTarget) Name() string          { return "toy" }
func (toyTarget) Owns(file string) bool { return strings.HasPrefix(file, "toy-") }
func (toyTarget) Render(gs []Group, _ Options) (Files, error) {
	f := Files{}
	for _, g := range gs {
		for _, u := range g.Units {
			b := []byte("apiVersion: toy/v1\nkind: Toy\nreplicas: " + itoa(u.Placement.Count) + "\n")
			if err := f.Put("toy-"+u.Name+".yaml", b, "rename"); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}
func (toyTarget) SchemaFor(_ string, doc map[string]any) (Schema, bool) {
	if doc["kind"] != "Toy" {
		return Schema{}, false
	}
	return Schema{Name: "toy.json", JSON: []byte(`{"type": "object", "required": ["replicas"], "additionalProperties": false,
		"properties": {"apiVersion": {"const": "toy/v1"}, "kind": {"const": "Toy"}, "replicas": {"type": "integer", "minimum": 1}}}`)}, true
}
func (toyTarget) Rules(files Files, _ Deployable) []string {
	if len(files) > 2 {
		return []string{"toy: more than two units"}
	}
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestRegistryPlugsInATarget: a target registered beside the classic ones becomes an exporter
// of every system whose layout it renders, and validation takes its schema and rules — no
// other code names it.
func TestRegistryPlugsInATarget(t *testing.T) {
	reg, err := NewRegistry(TritonTarget, KServeTarget, RayTarget, toyTarget{})
	if err != nil {
		t.Fatal(err)
	}
	build := func(*formats.Plan, Options) ([]Group, error) {
		return []Group{{Name: "app", Units: []Unit{{Name: "a", Placement: Placement{Key: "a", GPU: "T4", VGPU: 1, Count: 2, Batch: 1}}}}}, nil
	}
	es := Exporters(reg, build)
	var names []string
	for _, e := range es {
		names = append(names, e.Target)
	}
	if !slices.Equal(names, []string{Triton, KServe, Ray, "toy"}) {
		t.Fatalf("exporters %v", names)
	}
	files, err := es[3].Export(&formats.Plan{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(files["toy-a.yaml"]) != "apiVersion: toy/v1\nkind: Toy\nreplicas: 2\n" || len(files) != 1 {
		t.Fatalf("toy export %q", files)
	}
	if err := reg.Validate(files, false); err != nil {
		t.Fatal(err)
	}
	// The target's schema and rules apply; the classic registry knows no such kind.
	bad := Files{"toy-a.yaml": []byte("apiVersion: toy/v1\nkind: Toy\nreplicas: 0\n")}
	if err := reg.Validate(bad, false); err == nil || !strings.Contains(err.Error(), "toy-a.yaml: replicas: 0") {
		t.Errorf("schema: %v", err)
	}
	if err := Validate(files); err == nil || !strings.Contains(err.Error(), `kind "Toy": not a manifest plan exports`) {
		t.Errorf("classic registry: %v", err)
	}
	three := Files{"toy-a.yaml": files["toy-a.yaml"], "toy-b.yaml": files["toy-a.yaml"], "toy-c.yaml": files["toy-a.yaml"]}
	if err := reg.Validate(three, false); err == nil || !strings.Contains(err.Error(), "toy: more than two units") {
		t.Errorf("rules: %v", err)
	}
	// A system's own renderer for a target wins over the target's rendering of its layout.
	own := Layout[[]Group]{Build: build, Own: map[string]func([]Group) (Files, error){"toy": func([]Group) (Files, error) {
		return Files{"toy-own.yaml": []byte("apiVersion: toy/v1\nkind: Toy\nreplicas: 1\n")}, nil
	}}}.Exporters(reg)
	if f, err := own[3].Export(&formats.Plan{}, Options{}); err != nil || f["toy-own.yaml"] == nil {
		t.Errorf("own renderer: %v %v", f, err)
	}
}

// TestNewRegistryRefuses names given twice or not DNS labels.
func TestNewRegistryRefuses(t *testing.T) {
	for _, c := range []struct {
		ts   []Target
		want string
	}{
		{[]Target{TritonTarget, TritonTarget}, `"triton": registered twice`},
		{[]Target{named("Bad_Name")}, "must be a DNS label"},
		{[]Target{named("")}, "must be a DNS label"},
	} {
		if _, err := NewRegistry(c.ts...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.ts, err, c.want)
		}
	}
}

type named string

func (n named) Name() string   { return string(n) }
func (named) Owns(string) bool { return false }
