package formats

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestWithoutKeys(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		cut      map[string][]string
		want     string
	}{
		{"first member", `{"jobs": {"a": 1}, "b": 2}`, map[string][]string{"": {"jobs"}}, `{"b": 2}`},
		{"last member", `{"b": 2, "jobs": [1, 2]}`, map[string][]string{"": {"jobs"}}, `{"b": 2}`},
		{"only member", `{ "jobs" : null }`, map[string][]string{"": {"jobs"}}, `{}`},
		{"order and spacing kept", "{\"z\": {\"y\": 1,\n \"x\": 2}, \"jobs\": 3, \"a\": \"}\"}", map[string][]string{"": {"jobs"}},
			"{\"z\": {\"y\": 1,\n \"x\": 2},\"a\": \"}\"}"},
		{"escaped key", `{"\u006aobs": 1, "b": 2}`, map[string][]string{"": {"jobs"}}, `{"b": 2}`},
		{"nested path", `{"p": {"o": {"b": 1, "a": 2}, "e": {"w": {"jobs": 1, "k": 2}}}, "jobs": 0}`,
			map[string][]string{"": {"jobs"}, "p.e.w": {"jobs"}}, `{"p": {"o": {"b": 1, "a": 2},"e": {"w": {"k": 2}}}}`},
		{"nothing to cut", `{"b": 1, "a": 2}`, map[string][]string{}, `{"b": 1,"a": 2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := withoutKeys([]byte(tc.in), tc.cut)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	if _, err := withoutKeys([]byte(`[1]`), nil); err == nil {
		t.Error("an array was cut as an object")
	}
}

// A plan read with registered sections keeps its free-form values as written: the typed
// decode reads the file's bytes, not the tree re-marshalled with sorted keys.
func TestRegisteredSectionsKeepOptionsOrder(t *testing.T) {
	const plan = `{"apiVersion": "plan/v1", "kind": "Plan", "metadata": {"name": "jobs"},
  "jobs": {"rate_rps": 10},
  "provenance": {"tool": "plan", "tool_version": "test", "input_digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
    "options": {"strategy": "x", "gpus": 2, "alpha": 0.1}, "status": "heuristic", "objective": 1, "solve_ms": 0,
    "embedded": {"workload": {"apiVersion": "plan/v1", "kind": "Workload", "metadata": {"name": "jobs"}, "jobs": {"rate_rps": 10}}}}}`
	doc, err := Decode("plan.json", []byte(plan), jobsSet())
	if err != nil {
		t.Fatal(err)
	}
	p := doc.(*Plan)
	if got, want := string(p.Provenance.Options), `{"strategy": "x", "gpus": 2, "alpha": 0.1}`; got != want {
		t.Errorf("options %s, want %s", got, want)
	}
	if p.Sections["jobs"].Value == nil || p.Provenance.Embedded.Workload.Sections["jobs"].Value == nil {
		t.Errorf("sections not attached: %v, %v", p.Sections, p.Provenance.Embedded.Workload.Sections)
	}
}

// encoding/json alone reads a plan or workload of formats' own fields, and refuses one with a
// system's section instead of dropping it.
func TestPlanUnmarshalJSON(t *testing.T) {
	var p Plan
	if err := json.Unmarshal([]byte(`{"apiVersion": "plan/v1", "kind": "Plan", "provenance": {"status": "infeasible"}}`), &p); err != nil || p.Provenance.Status != "infeasible" {
		t.Fatalf("plain plan: %v, %+v", err, p)
	}
	err := json.Unmarshal([]byte(`{"apiVersion": "plan/v1", "kind": "Plan", "jobs": {"rate_rps": 1}}`), &p)
	if !errors.Is(err, ErrSectionsNeeded) || !strings.Contains(err.Error(), `"jobs"`) {
		t.Fatalf("plan with a section: %v, want ErrSectionsNeeded naming jobs", err)
	}
	var w Workload
	if err := json.Unmarshal([]byte(`{"apiVersion": "plan/v1", "kind": "Workload", "metadata": {"name": "w"}}`), &w); err != nil || w.Metadata.Name != "w" {
		t.Fatalf("plain workload: %v, %+v", err, w)
	}
	err = json.Unmarshal([]byte(`{"apiVersion": "plan/v1", "kind": "Workload", "models": [{"name": "m"}]}`), &w)
	if !errors.Is(err, ErrSectionsNeeded) || !strings.Contains(err.Error(), `formats.Workload: "models"`) {
		t.Fatalf("workload with a section: %v, want ErrSectionsNeeded naming models", err)
	}
}
