package ppipe

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

func TestUnknownPolicyParams(t *testing.T) {
	tests := []struct {
		policy string
		params map[string]string
		want   string
	}{
		{"ppipe", map[string]string{"admision": "false"}, "policy ppipe: unknown parameter admision: it takes interval, penalty, admission"},
		{"ppipe-paper", map[string]string{"x": "1"}, "policy ppipe: unknown parameter x"},
		{"reactive", map[string]string{"interval": "true"}, "policy reactive: unknown parameter interval: it takes no parameters"},
		{"ppipe", map[string]string{"interval": "true", "admission": "false"}, ""},
	}
	for _, tc := range tests {
		_, err := NewPolicy(dataplane.Config{Policy: tc.policy, Params: tc.params})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %v: %v", tc.policy, tc.params, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %v: error %v, want %q", tc.policy, tc.params, err, tc.want)
		}
	}
	// ppipe-paper fills in its defaults on a copy, never in the caller's map.
	params := map[string]string{"interval": "true"}
	if _, err := NewPolicy(dataplane.Config{Policy: "ppipe-paper", Params: params}); err != nil {
		t.Fatal(err)
	}
	if len(params) != 1 {
		t.Errorf("ppipe-paper changed the caller's params: %v", params)
	}
}
