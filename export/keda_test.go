package export

import (
	"reflect"
	"strings"
	"testing"
)

const kedaDoc = `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: m
spec:
  cooldownPeriod: 300
  maxReplicaCount: 4
  minReplicaCount: 1
  pollingInterval: 15
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: m
  triggers:
  - metadata:
      ignoreNullValues: "true"
      query: sum(rate(plan_requests_total{model="m"}[1m]))
      serverAddress: http://prometheus-operated.monitoring.svc:9090
      threshold: "10"
    type: prometheus
`

// TestDecodeScaledObject: the exported shape decodes to its rule (threshold per pod, the
// query's 1 m range, the object's polling and cooldown); every bad field is an error naming
// the file, the field and the value.
func TestDecodeScaledObject(t *testing.T) {
	r, err := DecodeScaledObject("so.yaml", []byte(kedaDoc))
	if err != nil {
		t.Fatal(err)
	}
	want := ScalerRule{Target: "m", Threshold: 10, PerPod: true, PollS: 15, CooldownS: 300, WindowS: 60, Min: 1, Max: 4, Query: `sum(rate(plan_requests_total{model="m"}[1m]))`}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("rule %+v, want %+v", r, want)
	}
	for _, tc := range []struct{ old, new, want string }{
		{`threshold: "10"`, `threshold: "ten"`, `so.yaml: spec.triggers[0].metadata.threshold: "ten": must be a finite number > 0`},
		{`threshold: "10"`, `threshold: "0"`, `metadata.threshold: "0": must be a finite number > 0`},
		{`threshold: "10"`, `threshold: "NaN"`, `metadata.threshold: "NaN"`},
		{`threshold: "10"`, `threshold: "10"` + "\n      activationThreshold: \"-1\"", `metadata.activationThreshold: "-1": must be a finite number >= 0`},
		{"kind: ScaledObject", "kind: ScaledJob", `so.yaml: kind: "ScaledJob": must be ScaledObject`},
		{"apiVersion: keda.sh/v1alpha1", "apiVersion: v1", `apiVersion: "v1"`},
		{"maxReplicaCount: 4", "maxReplicaCount: -1", "spec.maxReplicaCount: -1: must be >= 0"},
		{"minReplicaCount: 1", "minReplicaCount: 5", "spec.maxReplicaCount: 4: must be >= minReplicaCount (5)"},
		{"pollingInterval: 15", "pollingInterval: -15", "spec.pollingInterval: -15"},
		{"type: prometheus", "type: cpu", `spec.triggers[0].type: "cpu": must be prometheus`},
		{"pollingInterval: 15", "pollingIntervall: 15", `so.yaml: error unmarshaling JSON: while decoding JSON: json: unknown field "pollingIntervall"`},
		{"    name: m\n  triggers", "    name: \"\"\n  triggers", "spec.scaleTargetRef.name"},
		{"  - metadata", "  - metricType: Average\n    metadata", `spec.triggers[0].metricType: "Average"`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			doc := strings.Replace(kedaDoc, tc.old, tc.new, 1)
			if doc == kedaDoc {
				t.Fatalf("%q not in the document", tc.old)
			}
			if _, err := DecodeScaledObject("so.yaml", []byte(doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestScalerReplay: replicas follow ceil(rate / threshold) over the query's window, up at
// once, down only after the HPA's 300 s window, within the range; the tolerance keeps a
// count within 10%; minReplicaCount 0 idles only after the cooldown.
func TestScalerReplay(t *testing.T) {
	rule := ScalerRule{Threshold: 10, PerPod: true, PollS: 15, CooldownS: 300, WindowS: 60, Min: 1, Max: 4}
	flat := func(x float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = x
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		rule  ScalerRule
		rps   []float64
		start int
		want  []ReplicaStep
	}{
		{"steady within one replica", rule, flat(8, 60), 1, []ReplicaStep{{0, 1, 0}}},
		{"a step up follows the 1 m window",
			rule, append(flat(5, 6), flat(35, 24)...), 1,
			// At 75 s the 1 m mean is 12.5 (2), at 90 s 20 is within the tolerance of 2, at
			// 105 s 27.5 (3), at 120 s 35 (4).
			[]ReplicaStep{{0, 1, 0}, {75, 2, 12.5}, {105, 3, 27.5}, {120, 4, 35}}},
		{"capped at max", rule, flat(100, 12), 4, []ReplicaStep{{0, 4, 0}}},
		{"down after 300 s",
			rule, append(flat(35, 10), flat(5, 50)...), 4,
			// The rate falls at 100 s; the 1 m mean recommends 4 until 105 s, then 3 (120 s),
			// 2 (135 s), 1 (150 s on): each is followed 300 s later, the window's highest.
			[]ReplicaStep{{0, 4, 0}, {420, 3, 5}, {435, 2, 5}, {450, 1, 5}}},
		{"tolerance keeps 2 at 21 rps", rule, append(flat(20, 10), flat(21, 20)...), 2, []ReplicaStep{{0, 2, 0}}},
		{"to zero after the cooldown",
			ScalerRule{Threshold: 10, PerPod: true, PollS: 30, CooldownS: 120, WindowS: 60, Min: 0, Max: 4}, append(flat(5, 3), flat(0, 30)...), 1,
			// The last poll that sees a request is at 60 s; zero 120 s later.
			[]ReplicaStep{{0, 1, 0}, {180, 0, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rule.Replay(tc.rps, 10, tc.start); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Replay = %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzDecodeScaledObject: any input decodes to a rule whose range and threshold are sound,
// or to an error; never a panic.
func FuzzDecodeScaledObject(f *testing.F) {
	f.Add([]byte(kedaDoc))
	f.Add([]byte(strings.Replace(kedaDoc, "[1m]", "[0s]", 1)))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeScaledObject("f.yaml", data)
		if err != nil {
			return
		}
		if r.Threshold <= 0 || r.Max < max(r.Min, 1) || r.PollS <= 0 || r.WindowS <= 0 {
			t.Fatalf("unsound rule %+v", r)
		}
		_ = r.Replay([]float64{1, 2, 3}, 10, 1)
	})
}
