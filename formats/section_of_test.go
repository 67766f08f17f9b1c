package formats

import (
	"encoding/json"
	"strings"
	"testing"
)

// crew is a section declared as a SectionOf value: the way a system registers a section of
// its own type without writing Decode or Schema.
type crew struct {
	Name    string      `json:"name"`
	SLO     Duration    `json:"slo"`
	Workers []crewShift `json:"workers"`
	Note    string      `json:"note,omitempty"`
}

type crewShift struct {
	GPU   string `json:"gpu"`
	Count int    `json:"count"`
}

var crewSection = SectionOf[crew]{Name: "crew", Sys: "crewer",
	Check: func(c *crew) ErrorList {
		var ck Checker
		for i, w := range c.Workers {
			ck.AtLeast(Field(Index("crew.workers", i), "count"), int64(w.Count), 1)
		}
		return ck.Errs()
	},
	Cross: func(c *crew, _ string, docs map[string]Document) ErrorList {
		for name, d := range docs {
			if cl, ok := d.(*Cluster); ok && len(cl.GPUs) == 0 {
				return ErrorList{{File: name, Path: "gpus", Rule: "a crew needs GPUs"}}
			}
		}
		return nil
	},
}

// TestSectionOfDecode: a SectionOf section is checked against its Go type as formats' own
// fields are — every problem with its path under the section's key — then decoded into *T.
func TestSectionOfDecode(t *testing.T) {
	tests := []struct {
		name string
		js   string
		want []string // problems ("" = decodes)
	}{
		{"ok", `{"name":"a","slo":"200ms","workers":[{"gpu":"L4","count":2}]}`, nil},
		{"wrong types", `{"name":3,"slo":"200ms","workers":[{"gpu":"L4","count":1.5}]}`,
			[]string{"crew.name: 3: must be a string", "crew.workers[0].count: 1.5: must be an integer"}},
		{"missing required", `{"name":"a","workers":[]}`, []string{"crew.slo: missing required field"}},
		{"unknown field", `{"name":"a","slo":"1s","workers":[],"nmae":"x"}`, []string{"crew.nmae: unknown field"}},
		{"bad duration", `{"name":"a","slo":"fast","workers":[]}`, []string{`crew.slo: "fast": must be a duration`}},
		{"not an object", `[1]`, []string{"crew: [...]: must be an object"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := crewSection.Decode([]byte(tc.js))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if c, ok := v.(*crew); !ok || c.Name != "a" {
					t.Fatalf("decoded %#v", v)
				}
				return
			}
			if err == nil {
				t.Fatalf("decoded %#v, want %v", v, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestSectionOfInPlan: registered through a SectionSet, the section is read from a plan file,
// validated by Check, cross-checked by Cross, written back in place, and read and replaced
// through In and Put; the plan's schema describes it from its Go type.
func TestSectionOfInPlan(t *testing.T) {
	secs := &SectionSet{Systems: []string{"crewer"}, Plan: []Section{crewSection}}
	doc := `{"apiVersion":"` + APIVersion + `","kind":"Plan","metadata":{"name":"p"},"provenance":{"tool":"plan","tool_version":"dev","input_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","status":"heuristic","objective":1,"solve_ms":0},` +
		`"crew":{"name":"a","slo":"200ms","workers":[{"gpu":"L4","count":2}]}}`
	d, err := Decode("p.json", []byte(doc), secs)
	if err != nil {
		t.Fatal(err)
	}
	p := d.(*Plan)
	c := crewSection.In(p.Sections)
	if c == nil || c.Workers[0].GPU != "L4" {
		t.Fatalf("In: %#v", c)
	}
	c.Workers[0].Count = 0
	if errs := p.Validate(secs); len(errs) != 1 || !strings.Contains(errs[0].Error(), "crew.workers[0].count: 0: must be >= 1") {
		t.Errorf("Validate: %v", errs)
	}
	c.Workers[0].Count = 2
	if errs := CheckSet(map[string]Document{"p.json": p, "c.json": &Cluster{}}, secs); !strings.Contains(errs.Error(), "c.json: gpus: a crew needs GPUs") {
		t.Errorf("cross-check: %v", errs)
	}
	js, err := json.Marshal(p)
	if err != nil || !strings.Contains(string(js), `"crew":{"name":"a","slo":"200ms","workers":[{"gpu":"L4","count":2}]}`) {
		t.Errorf("written back: %s (%v)", js, err)
	}
	crewSection.Put(&p.Sections, &crew{Name: "b"})
	if crewSection.In(p.Sections).Name != "b" {
		t.Error("Put did not replace the section")
	}
	crewSection.Put(&p.Sections, nil)
	if crewSection.In(p.Sections) != nil {
		t.Error("Put(nil) did not remove the section")
	}
	s, err := Schema(KindPlan, secs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"crew": {`, `"$ref": "#/$defs/crew"`, `"crewShift": {`} {
		if !strings.Contains(string(s), want) {
			t.Errorf("plan schema lacks %s", want)
		}
	}
	frag, _ := json.Marshal(crewSection.Schema())
	for _, want := range []string{`"$defs":{`, `"crew":{`, `"crewShift":{`} {
		if !strings.Contains(string(frag), want) {
			t.Errorf("fragment lacks %s: %s", want, frag)
		}
	}
}

// FuzzSectionOfDecode: any bytes either decode into a *crew that encodes and decodes again to
// the same value, or are refused with problems under the section's key; nothing panics.
func FuzzSectionOfDecode(f *testing.F) {
	for _, s := range []string{`{"name":"a","slo":"200ms","workers":[{"gpu":"L4","count":2}]}`, `{"name":3}`, `[]`, `{"slo":"1e309s"}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		v, err := crewSection.Decode(js)
		if err != nil {
			for _, e := range Problems(err) {
				if e.Path != "crew" && !strings.HasPrefix(e.Path, "crew.") && !strings.HasPrefix(e.Path, "crew[") {
					t.Fatalf("problem outside the section: %v", e)
				}
			}
			return
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		again, err := crewSection.Decode(out)
		if err != nil {
			t.Fatalf("%s re-encoded as %s, refused: %v", js, out, err)
		}
		if out2, _ := json.Marshal(again); string(out2) != string(out) {
			t.Fatalf("round trip: %s then %s", out, out2)
		}
	})
}

// TestSectionPositions: registered sections are written, described and checked in their
// declared positions (then by key, unpositioned last), before the plan's fleet and
// prediction, whatever their keys' order: a section keeps its place when it moves out of
// formats.
func TestSectionPositions(t *testing.T) {
	first := SectionOf[crew]{Name: "crew_z", Sys: "crewer", Position: 1}
	second := SectionOf[crew]{Name: "crew_a", Sys: "crewer", Position: 2}
	last := SectionOf[crew]{Name: "crew_b", Sys: "crewer"}
	for _, order := range [][]Section{{first, second, last}, {last, second, first}} {
		secs := &SectionSet{Systems: []string{"crewer"}, Plan: order}
		p := &Plan{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindPlan}, Prediction: &Prediction{}}
		for _, s := range []SectionOf[crew]{last, second, first} {
			s.Put(&p.Sections, &crew{Name: s.Name})
		}
		if got := strings.Join(p.Sections.Keys(), ","); got != "crew_z,crew_a,crew_b" {
			t.Errorf("Keys = %s, want crew_z,crew_a,crew_b", got)
		}
		js, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		z, a, b, pr := strings.Index(string(js), `"crew_z"`), strings.Index(string(js), `"crew_a"`), strings.Index(string(js), `"crew_b"`), strings.Index(string(js), `"prediction"`)
		if !(z < a && a < b && b < pr) {
			t.Errorf("written order (crew_z, crew_a, crew_b, prediction at %d, %d, %d, %d): %s", z, a, b, pr, js)
		}
		s, err := Schema(KindPlan, secs)
		if err != nil {
			t.Fatal(err)
		}
		z, a, b, f := strings.Index(string(s), `"crew_z": {`), strings.Index(string(s), `"crew_a": {`), strings.Index(string(s), `"crew_b": {`), strings.Index(string(s), `"fleet": {`)
		if !(z < a && a < b && b < f) {
			t.Errorf("schema order (crew_z, crew_a, crew_b, fleet at %d, %d, %d, %d)", z, a, b, f)
		}
	}
}

// A list-valued section reads, writes and counts as a typed list field with omitempty does:
// an empty list is no section.
func TestSectionOfEmptyList(t *testing.T) {
	shifts := SectionOf[[]crewShift]{Name: "shifts", Sys: "crewer"}
	set := &SectionSet{Systems: []string{"crewer"}, Workload: []Section{crewSection, shifts}}
	for _, tc := range []struct {
		name, body string
		want       int // shifts read; -1 = no section
	}{
		{"two", `[{"gpu": "L4", "count": 1}, {"gpu": "T4", "count": 2}]`, 2},
		{"empty", `[]`, -1},
		{"null", `null`, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"apiVersion": "plan/v1", "kind": "Workload", "metadata": {"name": "w"}, "crew": {"name": "c", "slo": "1s", "workers": []}, "shifts": ` + tc.body + `}`
			w, err := DecodeInto[*Workload]("w.json", []byte(doc), set)
			if err != nil {
				t.Fatal(err)
			}
			got := shifts.In(w.Sections)
			switch {
			case tc.want < 0 && (got != nil || len(w.SectionKeys()) != 1):
				t.Fatalf("read %v, keys %v: want no section", got, w.SectionKeys())
			case tc.want >= 0 && (got == nil || len(*got) != tc.want):
				t.Fatalf("read %v, want %d shifts", got, tc.want)
			}
			out, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(out), `"shifts"`); has != (tc.want >= 0) {
				t.Errorf("written %s", out)
			}
		})
	}
	var w Workload
	empty := []crewShift{}
	w.Sections.Set(shifts, &empty)
	if len(w.Sections) != 0 {
		t.Errorf("an empty list was kept: %v", w.Sections)
	}
}
