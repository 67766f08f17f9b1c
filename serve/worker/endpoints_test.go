package worker

import (
	"strings"
	"testing"
)

func TestEndpointsFile(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"ok yaml", "apiVersion: plan/v1\nkind: Endpoints\nstages:\n  - stage: '*'\n    urls: [http://127.0.0.1:9]\n", ""},
		{"unknown field", "apiVersion: plan/v1\nkind: Endpoints\nstages:\n  - stage: '*'\n    url: http://x\n", "unknown field"},
		{"wrong kind", "apiVersion: plan/v1\nkind: Plan\nstages:\n  - stage: '*'\n    urls: [http://x]\n", "kind: Plan: must be Endpoints"},
		{"no stages", "apiVersion: plan/v1\nkind: Endpoints\n", "stages: 0"},
		{"no urls", "apiVersion: plan/v1\nkind: Endpoints\nstages:\n  - stage: a\n    urls: []\n", "stages[0].urls: 0"},
		{"bad url", "apiVersion: plan/v1\nkind: Endpoints\nstages:\n  - stage: a\n    urls: ['127.0.0.1:80']\n", "stages[0].urls[0]"},
		{"bad pattern", "apiVersion: plan/v1\nkind: Endpoints\nstages:\n  - stage: '[a'\n    urls: [http://x]\n", "not a valid pattern"},
		{"not yaml", "{{{", "cannot decode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeEndpoints("e.yaml", []byte(c.doc))
			switch {
			case c.want == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want %q", err, c.want)
			case err != nil && !strings.HasPrefix(err.Error(), "e.yaml: "):
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}
