package ppipesys

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// TestResolveOptions: the recorded options are re-used, typed or as the string maps plans
// recorded before the options were typed; plans from before fill_surplus existed (no key)
// re-solve without filling, as they were made; what is not recorded takes the plan section's.
func TestResolveOptions(t *testing.T) {
	for _, tc := range []struct {
		name, rec   string
		fill, warm  bool
		partitions  int
		replicas    int
		timeLimit   time.Duration
		alpha       float64
		arrivalRate float64
	}{
		{"legacy fill", `{"fill_surplus": "true"}`, true, true, 2, 0, 0, 0, 0},
		{"legacy no fill", `{"fill_surplus": "false", "warm_start": "false"}`, false, false, 2, 0, 0, 0, 0},
		{"legacy before the option", `{}`, false, true, 2, 0, 0, 0, 0},
		{"legacy all", `{"max_partitions": "3", "alpha": "0.4", "time_limit": "1m0s", "replicas": "2", "arrival_rate": "50", "fill_surplus": "true", "warm_start": "true"}`, true, true, 3, 2, time.Minute, 0.4, 50},
		{"typed", `{"max_partitions": 3, "alpha": 0.4, "time_limit": "1m0s", "replicas": 2, "arrival_rate": 50, "fill_surplus": true, "warm_start": true}`, true, true, 3, 2, time.Minute, 0.4, 50},
		{"typed no margin", `{"alpha": 0, "fill_surplus": false, "warm_start": false}`, false, false, 2, 0, 0, 0, 0},
	} {
		p := ppipesec.SetPlan(&formats.Plan{}, &ppipesec.PPipePlan{Strategy: "ppipe", MaxPartitions: 2})
		p.Provenance.Options = json.RawMessage(tc.rec)
		o, err := resolveOptions(p, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if o.FillSurplus != tc.fill || o.NoWarmStart == tc.warm || o.MaxPartitions != tc.partitions || o.Replicas != tc.replicas ||
			o.TimeLimit != tc.timeLimit || o.Alpha != tc.alpha || o.ArrivalRate != tc.arrivalRate || o.Strategy != "ppipe" || !o.Deterministic {
			t.Errorf("%s: options %s: got %+v", tc.name, tc.rec, o)
		}
	}
	for _, rec := range []string{`{"gap": "x"}`, `{"gap": "0.1", "max_partitions": "x"}`, `{"no_such_option": 1}`, `{"replicas": "two"}`, `[1]`} {
		p := ppipesec.SetPlan(&formats.Plan{}, &ppipesec.PPipePlan{Strategy: "ppipe"})
		p.Provenance.Options = json.RawMessage(rec)
		if _, err := resolveOptions(p, 0); err == nil {
			t.Errorf("unreadable options %s accepted", rec)
		}
	}
}
