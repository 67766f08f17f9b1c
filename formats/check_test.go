package formats

import (
	"strings"
	"testing"
)

// goodSet decodes the named good fixtures into a CheckSet input.
func goodSet(t *testing.T, names ...string) map[string]Document {
	t.Helper()
	docs := map[string]Document{}
	for _, n := range names {
		docs[n] = loadGood(t, n)
	}
	return docs
}

func TestCheckSet(t *testing.T) {
	all := []string{"cluster.yaml", "profile.json", "workload.yaml", "plan.json", "plan-sections.json", "trace-requests.json", "trace-counts.json"}
	cases := []struct {
		name   string
		files  []string
		mutate func(map[string]Document)
		want   []string
	}{
		{"GPU type without latency", []string{"cluster.yaml", "profile.json"}, func(d map[string]Document) {
			d["cluster.yaml"].(*Cluster).GPUs[1].Type = "T4"
		}, []string{
			`profile.json: models[0].latency: "T4": no latency for GPU type T4 of cluster.yaml (model resnet50 is used)`,
			`profile.json: models[1].latency: "T4": no latency for GPU type T4 of cluster.yaml (model yolov5s is used)`}},
		{"GPU type with no GPUs is fine", []string{"cluster.yaml", "profile.json"}, func(d map[string]Document) {
			d["cluster.yaml"].(*Cluster).GPUs = append(d["cluster.yaml"].(*Cluster).GPUs, GPUPool{Type: "A100", Count: 0, PerServer: 8})
		}, nil},
		{"LLM with no profile on the cluster", []string{"cluster.yaml", "profile.json"}, func(d map[string]Document) {
			d["cluster.yaml"].(*Cluster).GPUs[0].Type = "A10"
		}, []string{
			`profile.json: models[0].latency: "A10": no latency for GPU type A10 of cluster.yaml (model resnet50 is used)`,
			`profile.json: models[1].latency: "A10": no latency for GPU type A10 of cluster.yaml (model yolov5s is used)`,
			`profile.json: llms[2].gpu: "L4": LLM llama-3.1-8b has no profile on any GPU type of the cluster (A10, P4)`}},
		{"plan GPU type unknown", []string{"cluster.yaml", "plan.json", "plan-sections.json"}, func(d map[string]Document) {
			d["cluster.yaml"].(*Cluster).GPUs[1].Type = "T4"
		}, []string{
			`plan-sections.json: pard.apps[0].modules[1].gpu: "P4": unknown GPU type: not in cluster.yaml (L4, T4)`,
			`plan-sections.json: pard.apps[0].modules[2].gpu: "P4": unknown GPU type: not in cluster.yaml (L4, T4)`,
			`plan-sections.json: pard.apps[0].modules[3].gpu: "P4": unknown GPU type: not in cluster.yaml (L4, T4)`,
			`plan-sections.json: qlm.instances[1].gpu: "P4": unknown GPU type: not in cluster.yaml (L4, T4)`,
			`plan-sections.json: dyorc.deployments[1].gpu: "P4": unknown GPU type: not in cluster.yaml (L4, T4)`,
			`plan.json: ppipe.models[0].pipelines[0].partitions[1].gpu: "P4": unknown GPU type: not in cluster.yaml (L4, T4)`,
			`plan.json: ppipe.models[1].pipelines[1].partitions[0].gpu: "P4": unknown GPU type: not in cluster.yaml (L4, T4)`,
			`plan.json: ppipe.gpu_use[1].gpu: "P4": unknown GPU type: not in cluster.yaml (L4, T4)`}},
		{"plan with embedded profiles ignores profiles beside it", []string{"profile.json", "plan.json"}, func(d map[string]Document) {
			ext := d["profile.json"].(*Profile)
			own := *ext
			own.Models = append([]ModelProfile(nil), ext.Models...)
			d["plan.json"].(*Plan).Provenance.Embedded = &EmbeddedInputs{Profiles: []Profile{own}}
			for i := range ext.Models {
				ext.Models[i].Name = "other-" + ext.Models[i].Name // another plan's models
			}
		}, nil},
		{"trace targets", []string{"workload.yaml", "trace-requests.json", "trace-counts.json"}, func(d map[string]Document) {
			tr := d["trace-requests.json"].(*Trace)
			tr.Requests[0].Target = "vgg16"
			tr.Requests[4].Target = "vgg16"
			tr.Requests[3].Class = "batch"
			d["trace-counts.json"].(*Trace).Counts.Target = "yolov5s" // a profile name, not the workload's model name
		}, []string{
			`trace-counts.json: counts.target: "yolov5s": unknown target: not a model or application of workload.yaml`,
			`trace-requests.json: requests[0].target: "vgg16": unknown target: not a model or application of workload.yaml (2 requests)`,
			`trace-requests.json: requests[3].class: "batch": unknown class: not an LLM class of workload.yaml`}},
		// A trace naming a model the plan does not serve must be refused.
		{"trace against plan", []string{"plan.json", "trace-requests.json", "trace-counts.json"}, func(d map[string]Document) {
			tr := d["trace-requests.json"].(*Trace)
			for i := range tr.Requests {
				tr.Requests[i].Target = "resnet50"
			}
			tr.Requests[2].Target, tr.Requests[5].Target = "vgg16", "vgg16"
			d["trace-counts.json"].(*Trace).Counts.Target = "detector"
		}, []string{
			`trace-counts.json: counts.target: "detector": unknown target: not a model or application served by plan.json (resnet50, yolov5s)`,
			`trace-requests.json: requests[2].target: "vgg16": unknown target: not a model or application served by plan.json (resnet50, yolov5s) (2 requests)`}},
		{"trace against a plan with workflows", []string{"plan-sections.json", "trace-requests.json"}, func(d map[string]Document) {
			d["trace-requests.json"].(*Trace).Requests[0].Target = "vgg16" // workflow apps live in the workload
		}, nil},
		{"nothing to check against", []string{"profile.json", "trace-requests.json"}, func(d map[string]Document) {
			d["trace-requests.json"].(*Trace).Requests[0].Target = "vgg16"
		}, nil},
		{"all good", all, func(map[string]Document) {}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			docs := goodSet(t, c.files...)
			c.mutate(docs)
			var got []string
			for _, e := range CheckSet(docs, inTree) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(c.want, "\n\t"))
			}
		})
	}
}

// CheckSet must not panic on documents that are invalid on their own.
func TestCheckSetInvalidDocuments(t *testing.T) {
	docs := map[string]Document{
		"p.json": &Profile{Models: []ModelProfile{{Name: "m"}}, LLMs: []LLMProfile{{Model: "l"}}},
		"c.yaml": &Cluster{GPUs: []GPUPool{{Type: "L4", Count: 1}}},
		"w.yaml": &Workload{},
		"t.json": &Trace{Counts: &RateSeries{}},
		"e.json": &Plan{},
	}
	_ = CheckSet(docs, inTree)
	_ = CheckSet(nil, inTree)
	for _, d := range docs {
		_ = Validate(d, inTree)
	}
}
