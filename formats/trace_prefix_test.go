package formats

import (
	"strings"
	"testing"
)

// TestValidateTracePrefix: one case per rule of a request's id and prompt sharing
// (prefix_group/prefix_tokens, hash_ids with hash_block_tokens).
func TestValidateTracePrefix(t *testing.T) {
	const f = "trace-prefix.json"
	ids := func(v ...int64) *[]int64 { return &v }
	runBad(t, []badCase{
		{"duplicate id", f, tr(func(t *Trace) { t.Requests[2].ID = "s1-t0" }), []string{`trace-prefix.json: requests[2].id: "s1-t0": must be unique: requests[0] has it too`}},
		{"group without tokens", f, tr(func(t *Trace) { t.Requests[0].PrefixTokens = 0 }), []string{`trace-prefix.json: requests[0].prefix_tokens: 0: must be >= 1 with prefix_group (how many prompt tokens the group shares)`}},
		{"tokens without group", f, tr(func(t *Trace) { t.Requests[3].PrefixTokens = 10 }), []string{`trace-prefix.json: requests[3].prefix_tokens: 10: needs prefix_group (whose tokens they are)`}},
		{"prefix beyond the prompt", f, tr(func(t *Trace) { t.Requests[1].PrefixTokens = 701 }), []string{`trace-prefix.json: requests[1].prefix_tokens: 701: must be <= input_tokens (700)`}},
		{"ids for another length", f, tr(func(t *Trace) { t.Requests[2].InputTokens = 1537 }), []string{`trace-prefix.json: requests[2].hash_ids: 3: must have ceil(input_tokens 1537 / hash_block_tokens 512) = 4 ids`}},
		{"ids without a block size", f, tr(func(t *Trace) { t.HashBlockTokens = 0 }), []string{`trace-prefix.json: requests[2].hash_ids: 3: need hash_block_tokens (the tokens per hash id; Mooncake: 512)`}},
		{"negative block size", f, tr(func(t *Trace) { t.HashBlockTokens = -1 }), []string{`trace-prefix.json: hash_block_tokens: -1: must be in [0, 16777216]`, `trace-prefix.json: requests[2].hash_ids: 3: need hash_block_tokens (the tokens per hash id; Mooncake: 512)`}},
		{"negative id", f, tr(func(t *Trace) { t.Requests[2].HashIDs = ids(0, -1, 2) }), []string{`trace-prefix.json: requests[2].hash_ids[1]: -1: must be >= 0`}},
		{"group and ids", f, tr(func(t *Trace) { t.Requests[2].PrefixGroup, t.Requests[2].PrefixTokens = "g", 5 }), []string{`trace-prefix.json: requests[2].hash_ids: 3: set hash_ids or prefix_group, not both`}},
	})
}

// TestPrefixGroupDecode: prefix_group is a string or an integer (7 is group "7") on both
// decoding paths, in JSON and YAML; anything else is a structural error at its path.
func TestPrefixGroupDecode(t *testing.T) {
	doc := func(g string) string {
		return `{"apiVersion": "plan/v1", "kind": "Trace", "metadata": {"name": "x"}, "requests": [{"t_us": 0, "input_tokens": 10, "prefix_group": ` + g + `, "prefix_tokens": 4}]}`
	}
	for _, c := range []struct {
		name, data, want, wantErr string
	}{
		{"string", doc(`"sys"`), "sys", ""},
		{"integer", doc(`7`), "7", ""},
		{"negative integer", doc(`-3`), "-3", ""},
		{"yaml integer", "apiVersion: plan/v1\nkind: Trace\nmetadata: {name: x}\nrequests:\n- {t_us: 0, input_tokens: 10, prefix_group: 12, prefix_tokens: 4}\n", "12", ""},
		{"fraction", doc(`1.5`), "", `t.json: requests[0].prefix_group: 1.5: must be a string or an integer`},
		{"bool", doc(`true`), "", `t.json: requests[0].prefix_group: true: must be a string or an integer`},
		{"object", doc(`{}`), "", `t.json: requests[0].prefix_group: {...}: must be a string or an integer`},
	} {
		for _, tree := range []bool{false, true} {
			t.Run(c.name, func(t *testing.T) {
				treeOnly = tree
				defer func() { treeOnly = false }()
				got, err := DecodeInto[*Trace]("t.json", []byte(c.data), nil)
				if c.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), c.wantErr) {
						t.Fatalf("tree %v: err = %v, want %q", tree, err, c.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatalf("tree %v: %v", tree, err)
				}
				if g := string(got.Requests[0].PrefixGroup); g != c.want {
					t.Fatalf("tree %v: group %q, want %q", tree, g, c.want)
				}
			})
		}
	}
}
