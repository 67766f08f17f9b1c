package tinycascade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Dir is where the bundled tiny cascade lives, relative to the repository root.
const Dir = "testdata/cascade/onnx"

// Samples is the number of validation samples in the workload.
const Samples = 600

// Task is the cascade's name in the workload (and the served model's name).
const Task = "tiny"

// Files returns every generated file of Dir by name: the three models, the workload with
// their validation records, and two KServe request bodies (confident.json: an input mlp-s
// is sure of; uncertain.json: one it is not). The profile, cluster and plan are not here:
// the profile is measured (plan profile) and the plan solved from it (plan solve).
func Files() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, name := range Names {
		b, err := Build(name)
		if err != nil {
			return nil, err
		}
		out[name+".onnx"] = b
	}
	models, ref, err := LoadAll()
	if err != nil {
		return nil, err
	}
	xs := Inputs(Samples)
	o, err := Run(models, ref, xs)
	if err != nil {
		return nil, err
	}
	out["workload.yaml"] = Workload(o)
	conf, unc := Pick(o)
	for name, s := range map[string]int{"confident.json": conf, "uncertain.json": unc} {
		b, err := RequestBody(fmt.Sprintf("sample-%d", s), xs[s])
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}

// Pick returns the first sample every model answers with certainty ≥ 0.95 and right (it
// leaves at the first stage of any cascade the planner picks, under any threshold below
// that) and the first that every model but the last answers with certainty < 0.5 and
// wrong, the last right (it is forwarded to the end, and forwarding changes the answer).
func Pick(o *Outputs) (confident, uncertain int) {
	confident, uncertain = -1, -1
	last := len(Names) - 1
	for s := range o.Labels {
		allSure, allUnsure := true, true
		for i, n := range Names {
			c, l := Top(o.Probs[n][s])
			right := l == o.Labels[s]
			allSure = allSure && c >= 0.95 && right
			if i < last {
				allUnsure = allUnsure && c < 0.5 && !right
			} else {
				allUnsure = allUnsure && right
			}
		}
		if confident < 0 && allSure {
			confident = s
		}
		if uncertain < 0 && allUnsure {
			uncertain = s
		}
	}
	return confident, uncertain
}

// RequestBody is a KServe v2 infer request for one input vector.
func RequestBody(id string, x []float32) ([]byte, error) {
	// Each value as the shortest decimal that reads back as the same float32.
	data := make([]json.Number, len(x))
	for i, v := range x {
		data[i] = json.Number(strconv.FormatFloat(float64(v), 'g', -1, 32))
	}
	req := map[string]any{"id": id, "inputs": []map[string]any{{
		"name": InputName, "shape": []int{1, len(x)}, "datatype": "FP32", "data": data,
	}}}
	b, err := json.MarshalIndent(req, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Workload renders the workload file (one flow-style record per line, as the bundled BERT
// example).
func Workload(o *Outputs) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `# A tiny real cascade: three ONNX classifiers of increasing size, written by the
# profiler's ONNX writer with seeded weights (internal/tinycascade). Validation records are
# the models' own outputs on %d seeded inputs, labelled by a larger reference model (accuracy
# mlp-s %.3f, mlp-m %.3f, mlp-l %.3f); regenerate with:
#   go test ./internal/tinycascade -run TestFiles -update
apiVersion: plan/v1
kind: Workload
metadata:
  name: tiny-cascade
  description: a 4-class classifier cascade over mlp-s, mlp-m and mlp-l (ONNX, runs on CPU)
cascades:
  - name: %s
    models: [%s]
    latency_slo: {percentile: 0.95, latency: 50ms}
    qps_max: 400
    qps_ranges: 4
    validation:
`, len(o.Labels), o.Accuracy(Names[0]), o.Accuracy(Names[1]), o.Accuracy(Names[2]), Task, strings.Join(Names, ", "))
	for _, r := range o.Validation() {
		fmt.Fprintf(&b, "      - {sample: %d, model: %s, pred: %q, cert: %s, label: %q}\n",
			r.Sample, r.Model, r.Pred, strconv.FormatFloat(r.Cert, 'f', -1, 64), r.Label)
	}
	return b.Bytes()
}
