package worker

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/jsonx"
	"github.com/plan-dev/plan/serve/kserve"
)

// EndpointsKind is the kind of an endpoints file.
const EndpointsKind = "Endpoints"

// Endpoints maps the stages of a deployment to remote KServe v2 / Triton HTTP endpoints:
// this is how `plan serve --workers remote` fronts an existing serving engine.
//
//	apiVersion: plan/v1
//	kind: Endpoints
//	stages:
//	  - stage: "demo/p0/s0"        # a stage name, "*" (every stage), or a path.Match pattern ("demo/*/s1")
//	    model: demo-head           # the model name at the endpoint (default: the plan's model)
//	    urls: [http://127.0.0.1:8001, http://127.0.0.1:8002]
//
// The first entry whose pattern matches a stage serves it; pool member i of the stage uses
// urls[i mod len(urls)].
type Endpoints struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Stages     []StageEndpoint `json:"stages"`
	// file is the name errors are reported against.
	file string
	// transports serve the URL schemes other than http(s) (remote_transport.go).
	transports map[string]StageTransport
}

// StageEndpoint is one entry of an endpoints file.
type StageEndpoint struct {
	Stage string   `json:"stage"`
	Model string   `json:"model,omitempty"`
	URLs  []string `json:"urls"`
}

// ReadEndpoints reads and validates an endpoints file (YAML or JSON).
func ReadEndpoints(p string) (*Endpoints, error) {
	data, err := formats.ReadBytes(p)
	if err != nil {
		return nil, err
	}
	return DecodeEndpoints(filepath.Base(p), data)
}

// DecodeEndpoints decodes an endpoints document strictly (unknown fields are errors) and
// validates it; errors render as `file: path: value: rule`.
func DecodeEndpoints(name string, data []byte) (*Endpoints, error) {
	// A JSON file passes the gate before the YAML parser sees it (nesting, duplicate keys);
	// the JSON the YAML becomes is decoded through it too.
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		if err := jsonx.Check(t, nil, jsonx.Options{MaxBytes: formats.MaxFileBytes}); err != nil && !errors.Is(err, jsonx.ErrSyntax) {
			return nil, fmt.Errorf("%s: %w: %v", name, formats.ErrDecode, err)
		}
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, formats.ErrDecode, err)
	}
	var e Endpoints
	if err := jsonx.Decode(js, &e, jsonx.Options{Closed: true}); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", name, formats.ErrDecode, kserve.DescribeJSONError(err))
	}
	e.file = name
	var errs formats.ErrorList
	add := func(p string, v any, rule string) {
		errs = append(errs, &formats.FieldError{File: name, Path: p, Value: fmt.Sprint(v), Rule: rule})
	}
	if e.APIVersion != formats.APIVersion {
		add("apiVersion", e.APIVersion, "must be "+formats.APIVersion)
	}
	if e.Kind != EndpointsKind {
		add("kind", e.Kind, "must be "+EndpointsKind)
	}
	if len(e.Stages) == 0 {
		add("stages", 0, "list at least one stage")
	}
	for i, s := range e.Stages {
		p := fmt.Sprintf("stages[%d]", i)
		if s.Stage == "" {
			add(p+".stage", `""`, "name a stage or a pattern such as \"*\"")
		} else if _, err := path.Match(s.Stage, ""); err != nil {
			add(p+".stage", s.Stage, "not a valid pattern")
		}
		if len(s.URLs) == 0 {
			add(p+".urls", 0, "list at least one endpoint URL")
		}
		for j, u := range s.URLs {
			pu, err := url.Parse(u)
			if err != nil || (pu.Scheme != "http" && pu.Scheme != "https" && !transportSchemes[pu.Scheme]) || pu.Host == "" {
				add(fmt.Sprintf("%s.urls[%d]", p, j), u, "must be an http://, https:// or grpc:// URL with a host")
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &e, nil
}

// matchStage matches a stage name against an entry: "*" alone matches every stage, anything
// else is a path.Match pattern over the "model/pipeline/stage" name ("demo/*/s0").
func matchStage(pattern, name string) bool {
	if pattern == "*" {
		return true
	}
	ok, _ := path.Match(pattern, name)
	return ok
}

// resolved is the endpoint of one worker.
type resolved struct {
	url   string
	model string
}

// resolve assigns an endpoint to every worker of dep.
func (e *Endpoints) resolve(dep *dataplane.Deployment) ([]resolved, error) {
	out := make([]resolved, len(dep.Topo.Workers))
	var missing []string
	for si := range dep.Stages {
		st := &dep.Stages[si]
		var ent *StageEndpoint
		for i := range e.Stages {
			if matchStage(e.Stages[i].Stage, st.Name) {
				ent = &e.Stages[i]
				break
			}
		}
		if ent == nil {
			missing = append(missing, st.Name)
			continue
		}
		model := ent.Model
		if model == "" {
			model = dep.Apps[st.App].Name
		}
		for i, w := range st.Pool {
			out[w] = resolved{url: strings.TrimRight(ent.URLs[i%len(ent.URLs)], "/"), model: model}
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: no endpoint serves stage(s) %s (add an entry, or one with stage \"*\")", e.file, strings.Join(missing, ", "))
	}
	return out, nil
}
