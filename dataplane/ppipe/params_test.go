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

// TestPPipeOptionsDecode: the dispatcher's parameters decode into PPipeOptions by their json
// tags, with the defaults of each policy and true/false or 1/0 spellings.
func TestPPipeOptionsDecode(t *testing.T) {
	for _, tc := range []struct {
		policy string
		params map[string]string
		want   PPipeOptions
	}{
		{"ppipe", nil, PPipeOptions{Penalty: true, Admission: true}},
		{"ppipe", map[string]string{"interval": "true", "admission": "0"}, PPipeOptions{Interval: true, Penalty: true}},
		{"ppipe-paper", nil, PPipeOptions{}},
		{"ppipe-paper", map[string]string{"penalty": "1"}, PPipeOptions{Penalty: true}},
	} {
		pol, err := NewPolicy(dataplane.Config{Policy: tc.policy, Params: tc.params})
		if err != nil {
			t.Fatal(err)
		}
		if got := pol.(*PPipe).opts; got != tc.want {
			t.Errorf("%s %v: %+v, want %+v", tc.policy, tc.params, got, tc.want)
		}
	}
	if _, err := NewPolicy(dataplane.Config{Policy: "ppipe", Params: map[string]string{"penalty": "maybe"}}); err == nil ||
		!strings.Contains(err.Error(), `policy ppipe: parameter penalty: "maybe": must be true or false`) {
		t.Errorf("error %v", err)
	}
}
