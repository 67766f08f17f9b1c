package formats

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// jobs is a section of a system formats does not type ("jobs"): what a sixth system
// registers through SectionSet.
type jobs struct {
	RateRPS float64 `json:"rate_rps"`
	Note    string  `json:"note,omitempty"`
}

type jobsSection struct{}

func (jobsSection) Key() string    { return "jobs" }
func (jobsSection) System() string { return "jobber" }
func (jobsSection) Decode(js []byte) (any, error) {
	var j jobs
	if err := StrictUnmarshal(js, &j); err != nil {
		return nil, ErrorList{{Path: "jobs", Rule: strings.TrimPrefix(err.Error(), "json: ")}}
	}
	return &j, nil
}
func (jobsSection) Validate(v any) ErrorList {
	if j := v.(*jobs); j.RateRPS <= 0 {
		return ErrorList{{Path: "jobs.rate_rps", Value: render(j.RateRPS), Rule: "must be > 0"}}
	}
	return nil
}
func (jobsSection) CrossCheck(v any, self string, docs map[string]Document) ErrorList {
	for name, d := range docs {
		if c, ok := d.(*Cluster); ok && len(c.GPUs) == 0 {
			return ErrorList{{File: name, Path: "gpus", Rule: "jobs need a GPU"}}
		}
	}
	return nil
}
func (jobsSection) Schema() map[string]any {
	return map[string]any{"type": "object", "required": []string{"rate_rps"}}
}

func jobsSet() *SectionSet {
	return &SectionSet{Systems: []string{"ppipe", "jobber"}, Plan: []Section{jobsSection{}}, Workload: []Section{jobsSection{}}}
}

func TestRegisteredSections(t *testing.T) {
	for _, tc := range []struct {
		file string
		secs *SectionSet
		want string // "" = decodes
	}{
		{"workload.json", jobsSet(), ""},
		{"plan.json", jobsSet(), ""},
		{"workload.json", nil, "workload.json: a Workload is read with the registered systems' sections: none were given"},
		{"workload.json", &SectionSet{Systems: []string{"ppipe"}}, "workload.json: jobs: unknown workload section: no registered system claims it (systems: ppipe)"},
		{"unknown.json", jobsSet(), "unknown.json: robots: unknown workload section: no registered system claims it (systems: jobber, ppipe)"},
		{"bad.yaml", jobsSet(), "bad.yaml: jobs: unknown field \"colour\""},
		{"invalid.yaml", jobsSet(), "invalid.yaml: jobs.rate_rps: -1: must be > 0"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			doc, err := ReadFile(filepath.Join("testdata/sections", tc.file), tc.secs)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var sv SectionValues
			switch d := doc.(type) {
			case *Workload:
				sv = d.Sections
				if got := d.SectionKeys(); len(got) != 1 || got[0] != "jobs" {
					t.Errorf("SectionKeys = %v", got)
				}
			case *Plan:
				sv = d.Sections
				if e := d.Provenance.Embedded; e == nil || e.Workload == nil || e.Workload.Sections["jobs"].Value == nil {
					t.Errorf("the embedded workload lost its section")
				}
			}
			if j, ok := sv["jobs"].Value.(*jobs); !ok || j.RateRPS != 10 {
				t.Fatalf("sections = %#v", sv)
			}
			// Encoding writes the section back; decoding that gives the same document.
			js, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(js, []byte(`"jobs":{"rate_rps":10`)) {
				t.Errorf("encoded without its section: %s", js)
			}
			again, err := Decode(tc.file, js, tc.secs)
			if err != nil {
				t.Fatal(err)
			}
			js2, _ := json.Marshal(again)
			if !bytes.Equal(js, js2) {
				t.Errorf("round trip changed the document:\n%s\n%s", js, js2)
			}
		})
	}
}

func TestSectionCrossCheckAndSchema(t *testing.T) {
	w, err := ReadFile("testdata/sections/workload.json", jobsSet())
	if err != nil {
		t.Fatal(err)
	}
	errs := CheckSet(map[string]Document{"w.json": w, "c.yaml": &Cluster{}}, inTree)
	if len(errs) != 1 || errs[0].Error() != "c.yaml: gpus: jobs need a GPU" {
		t.Errorf("CheckSet = %v", errs)
	}
	s, err := Schema(KindPlan, jobsSet())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(s, []byte(`"jobs": {`)) {
		t.Errorf("the plan schema does not describe the jobs section")
	}
	plain, _ := Schema(KindPlan, nil)
	if bytes.Contains(plain, []byte(`"jobs"`)) {
		t.Errorf("the plain schema describes an unregistered section")
	}
}
