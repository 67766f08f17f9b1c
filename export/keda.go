package export

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Replaying a KEDA ScaledObject (ecosystem-dropin.md §5): what a cluster would do with the
// object an export writes, so a replay can check its threshold against a trace. KEDA hands a
// Prometheus trigger to the HPA it creates as an External metric; the HPA sets
// replicas = ceil(value / threshold) for the default AverageValue (threshold per pod) or
// ceil(replicas · value / threshold) for Value, leaves the count alone within its tolerance
// (0.1), scales up at once and down to the highest recommendation of its stabilization
// window (300 s by default: a ScaledObject without advanced.horizontalPodAutoscalerConfig
// keeps it); within [minReplicaCount, maxReplicaCount], KEDA itself evaluating the trigger
// every pollingInterval and scaling to zero (minReplicaCount 0) only after cooldownPeriod
// with the value at or below activationThreshold.

// KEDA's and the HPA's defaults, written out so an export states what a cluster would
// otherwise assume: KEDA polls every 30 s and scales to zero only after 300 s; the HPA
// ignores a 10% deviation and waits 300 s before scaling down (dropin §5).
const (
	KEDAPollingInterval = 30  // s
	KEDACooldownPeriod  = 300 // s, N→0 only
	KEDAMaxReplicas     = 100
	HPATolerance        = 0.1
	HPADownWindow       = 300 // s, the HPA's scale-down stabilization window
)

// ScalerRule is a ScaledObject's Prometheus trigger as a replica rule.
type ScalerRule struct {
	// Target names the scaled workload (scaleTargetRef.name).
	Target string
	// Threshold is per replica (PerPod, AverageValue) or for the metric's value (Value).
	Threshold float64
	PerPod    bool
	// Activation is activationThreshold: at or below it a minReplicaCount-0 object idles.
	Activation float64
	// PollS, CooldownS and WindowS (the query's rate range, 60 s when it states none) in
	// seconds; Min and Max the replica range.
	PollS, CooldownS, WindowS float64
	Min, Max                  int
	// Query is the trigger's PromQL.
	Query string
}

// rangeRe finds a PromQL range selector, [1m] or [30s].
var rangeRe = regexp.MustCompile(`\[(\d+)(s|m|h)\]`)

// DecodeScaledObject reads a ScaledObject (YAML or JSON) strictly: unknown fields, another
// kind, a trigger that is not one Prometheus trigger, a threshold that is not a finite number
// > 0 or a replica range out of order are errors naming the file, the field and the value.
func DecodeScaledObject(file string, data []byte) (ScalerRule, error) {
	var so ScaledObject
	if err := yaml.UnmarshalStrict(data, &so); err != nil {
		return ScalerRule{}, fmt.Errorf("%s: %w", file, err)
	}
	bad := func(field string, v any, rule string) (ScalerRule, error) {
		return ScalerRule{}, fmt.Errorf("%s: %s: %v: %s", file, field, v, rule)
	}
	switch {
	case so.APIVersion != "keda.sh/v1alpha1":
		return bad("apiVersion", strconv.Quote(so.APIVersion), "must be keda.sh/v1alpha1")
	case so.Kind != "ScaledObject":
		return bad("kind", strconv.Quote(so.Kind), "must be ScaledObject")
	case so.Spec.ScaleTargetRef.Name == "":
		return bad("spec.scaleTargetRef.name", `""`, "must name the scaled Deployment")
	case len(so.Spec.Triggers) != 1:
		return bad("spec.triggers", len(so.Spec.Triggers), "must hold one trigger (a replay follows one metric)")
	case so.Spec.PollingInterval < 0:
		return bad("spec.pollingInterval", so.Spec.PollingInterval, "must be >= 0 (0: KEDA's 30 s)")
	case so.Spec.CooldownPeriod < 0:
		return bad("spec.cooldownPeriod", so.Spec.CooldownPeriod, "must be >= 0 (0: KEDA's 300 s)")
	case so.Spec.MinReplicaCount < 0:
		return bad("spec.minReplicaCount", so.Spec.MinReplicaCount, "must be >= 0")
	case so.Spec.MaxReplicaCount < 0:
		return bad("spec.maxReplicaCount", so.Spec.MaxReplicaCount, "must be >= 0 (0: KEDA's 100)")
	}
	r := ScalerRule{Target: so.Spec.ScaleTargetRef.Name, PerPod: true, Min: so.Spec.MinReplicaCount, Max: so.Spec.MaxReplicaCount,
		PollS: float64(so.Spec.PollingInterval), CooldownS: float64(so.Spec.CooldownPeriod), WindowS: 60}
	if r.PollS == 0 {
		r.PollS = KEDAPollingInterval
	}
	if so.Spec.CooldownPeriod == 0 {
		r.CooldownS = KEDACooldownPeriod
	}
	if r.Max == 0 {
		r.Max = KEDAMaxReplicas
	}
	if r.Max < max(r.Min, 1) {
		return bad("spec.maxReplicaCount", so.Spec.MaxReplicaCount, fmt.Sprintf("must be >= minReplicaCount (%d) and >= 1", r.Min))
	}
	t := so.Spec.Triggers[0]
	switch t.MetricType {
	case "", "AverageValue":
	case "Value":
		r.PerPod = false
	default:
		return bad("spec.triggers[0].metricType", strconv.Quote(t.MetricType), "must be AverageValue or Value")
	}
	if t.Type != "prometheus" {
		return bad("spec.triggers[0].type", strconv.Quote(t.Type), "must be prometheus")
	}
	num := func(key string, need bool) (float64, error) {
		s, ok := t.Metadata[key]
		if !ok && !need {
			return 0, nil
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (need && v == 0) {
			rule := "must be a finite number >= 0"
			if need {
				rule = "must be a finite number > 0"
			}
			_, e := bad("spec.triggers[0].metadata."+key, strconv.Quote(s), rule)
			return 0, e
		}
		return v, nil
	}
	var err error
	if r.Threshold, err = num("threshold", true); err != nil {
		return ScalerRule{}, err
	}
	if r.Activation, err = num("activationThreshold", false); err != nil {
		return ScalerRule{}, err
	}
	r.Query = t.Metadata["query"]
	if r.Query == "" {
		return bad("spec.triggers[0].metadata.query", `""`, "must be a PromQL query")
	}
	if m := rangeRe.FindStringSubmatch(r.Query); m != nil {
		n, _ := strconv.Atoi(m[1])
		r.WindowS = float64(n) * map[string]float64{"s": 1, "m": 60, "h": 3600}[m[2]]
		if r.WindowS <= 0 {
			return bad("spec.triggers[0].metadata.query", strconv.Quote(r.Query), "its range must be > 0")
		}
	}
	return r, nil
}

// ReplicaStep is the replica count from a time on (seconds from the trace's start).
type ReplicaStep struct {
	AtS      float64 `json:"at_s"`
	Replicas int     `json:"replicas"`
	// Value is the metric the decision saw.
	Value float64 `json:"value"`
}

// Replay runs the rule over a rate series: rps[i] is the metric's per-second rate over
// [i·stepS, (i+1)·stepS) (a trace's counts over its interval). KEDA evaluates every PollS
// on the mean rate of the last WindowS (the query's range; at most what the trace has shown
// so far), the HPA turns it into replicas (AverageValue:
// ceil(value / threshold); Value: ceil(current · value / threshold); within its tolerance the
// count stays), up at once, down only to the highest recommendation of the last
// HPADownWindow seconds, to zero only after CooldownS at or below Activation (minReplicaCount
// 0). start is the replicas at time 0 (clamped to the range). The result lists the changes,
// the first at 0.
func (r ScalerRule) Replay(rps []float64, stepS float64, start int) []ReplicaStep {
	lo := max(r.Min, 1)
	cur := min(max(start, lo), r.Max)
	if r.Min == 0 && start == 0 {
		cur = 0
	}
	out := []ReplicaStep{{AtS: 0, Replicas: cur}}
	end := float64(len(rps)) * stepS
	type rec struct {
		at float64
		n  int
	}
	// The count at the start is the window's first recommendation: a replay starting on a
	// fleet does not shrink it before the HPA could have.
	recs := []rec{{0, cur}}
	lastActive := 0.0
	for at := r.PollS; at < end; at += r.PollS {
		v := meanRate(rps, stepS, max(at-r.WindowS, 0), at)
		want := cur
		if r.PerPod {
			want = int(math.Ceil(v/r.Threshold - 1e-9))
		} else if cur > 0 {
			want = int(math.Ceil(float64(cur)*v/r.Threshold - 1e-9))
		}
		if cur > 0 {
			// The HPA's tolerance: a ratio within 10% of 1 keeps the count.
			ratio := v / (r.Threshold * float64(cur))
			if !r.PerPod {
				ratio = v / r.Threshold
			}
			if math.Abs(ratio-1) <= HPATolerance {
				want = cur
			}
		}
		want = min(max(want, lo), r.Max)
		// Scale down no lower than the highest recommendation of the window.
		recs = append(recs, rec{at, want})
		for len(recs) > 0 && recs[0].at < at-HPADownWindow {
			recs = recs[1:]
		}
		next := want
		if want < cur {
			next = cur
			hi := 0
			for _, x := range recs {
				hi = max(hi, x.n)
			}
			next = min(cur, hi)
		}
		active := v > r.Activation
		if active {
			lastActive = at
		}
		if r.Min == 0 {
			switch {
			case cur == 0 && active:
				next = max(next, 1)
			case cur == 0:
				next = 0
			case !active && at-lastActive >= r.CooldownS:
				next = 0
			}
		}
		if next != cur {
			cur = next
			out = append(out, ReplicaStep{AtS: at, Replicas: cur, Value: v})
		}
	}
	return out
}

// meanRate is the mean of the rate series over [from, to) (seconds; before 0: nothing).
func meanRate(rps []float64, stepS, from, to float64) float64 {
	if to <= from {
		return 0
	}
	sum := 0.0
	for i, x := range rps {
		a, b := float64(i)*stepS, float64(i+1)*stepS
		lo, hi := math.Max(a, from), math.Min(b, to)
		if hi > lo {
			sum += x * (hi - lo)
		}
	}
	return sum / (to - from)
}
