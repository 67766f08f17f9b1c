package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run/check"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/kserve"
)

// TestServeAcceptsWhatCheckAccepts mutates a cost plan the way an operator (or an attacker)
// edits one by hand and holds serve to `plan check`'s verdict: every mutation check's verify
// stage fails must be refused by `plan serve` at start (exit 2) and by a reload (the call
// PUT /v1/plan and SIGHUP make), each with check's own reason. One list of checks
// (systems.VerifyPlan) is what makes them agree; this test fails if either side drifts.
func TestServeAcceptsWhatCheckAccepts(t *testing.T) {
	const src = "../../../../testdata/golden/qlm-cost.json"
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	mutations := []struct {
		name string
		edit func(m map[string]any)
	}{
		{"digest changed", func(m map[string]any) {
			prov(m)["input_digest"] = "sha256:" + strings.Repeat("0", 64)
		}},
		{"fleet beyond available", func(m map[string]any) {
			for _, g := range m["fleet"].(map[string]any)["gpus_used"].([]any) {
				if g := g.(map[string]any); g["gpu"] == "A100" {
					g["count"] = 9.0
				}
			}
		}},
		{"fleet price edited", func(m map[string]any) {
			m["fleet"].(map[string]any)["gpus_used"].([]any)[0].(map[string]any)["price_per_hour"] = 0.01
		}},
		{"fleet cost edited", func(m map[string]any) { m["fleet"].(map[string]any)["cost_per_hour"] = 1.0 }},
		{"embedded cluster edited", func(m map[string]any) {
			prov(m)["embedded"].(map[string]any)["cluster"].(map[string]any)["nic_gbps"] = 400.0
		}},
		{"embedded workload edited", func(m map[string]any) {
			w := prov(m)["embedded"].(map[string]any)["workload"].(map[string]any)
			w["metadata"] = map[string]any{"name": "edited-after-solving"}
		}},
	}
	dir := t.TempDir()
	reg := systems.Default()
	base, err := formats.DecodeInto[*formats.Plan]("plan", orig, reg.Sections())
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(serve.Options{Plan: base, Deploy: reg.Deploy, Sections: reg.Sections(), Policies: reg.Policies()})
	if err != nil {
		t.Fatalf("the unmutated plan: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String() + "/v1/plan"
	digest := s.ActiveDigest()

	for _, mu := range mutations {
		t.Run(mu.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(orig, &m); err != nil {
				t.Fatal(err)
			}
			mu.edit(m)
			b, err := json.MarshalIndent(m, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, strings.ReplaceAll(mu.name, " ", "-")+".json")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			// check: exit 1, the failed verify lines are the reasons.
			code, out, stderr := rootRun(t, "check", path, "--output", "json")
			if code != ExitFailure {
				t.Fatalf("check: exit %d, want %d; %s %s", code, ExitFailure, out, stderr)
			}
			var rep check.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("check --output json: %v: %s", err, out)
			}
			var reasons []string
			for _, c := range rep.Checks {
				if !c.OK && c.Stage == "verify" {
					reasons = append(reasons, strings.TrimPrefix(c.Message, "verify: "))
				}
			}
			if len(reasons) == 0 {
				t.Fatalf("check failed no verify check: %s", out)
			}
			// serve at start: exit 2 with every reason.
			// A serve that accepts the plan would serve until stopped: bound the wait.
			type result struct {
				code   int
				stderr string
			}
			done := make(chan result, 1)
			go func() {
				c, _, e := rootRun(t, "serve", path, "--addr", "127.0.0.1:0")
				done <- result{c, e}
			}()
			select {
			case r := <-done:
				code, stderr = r.code, r.stderr
			case <-time.After(30 * time.Second):
				t.Fatal("serve started with a plan check rejects")
			}
			if code != ExitUsage {
				t.Fatalf("serve: exit %d, want 2; %s", code, stderr)
			}
			for _, r := range reasons {
				if !strings.Contains(stderr, r) {
					t.Errorf("serve start: stderr %q lacks check's reason %q", stderr, r)
				}
			}
			// reload (what SIGHUP calls) and PUT /v1/plan: refused, the old plan serves on.
			p, err := formats.DecodeInto[*formats.Plan]("plan", b, reg.Sections())
			if err != nil {
				t.Fatalf("the mutation is not a valid plan file: %v", err)
			}
			rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer rcancel()
			rerr := s.Reload(rctx, p)
			if rerr == nil {
				t.Fatal("reload accepted a plan check fails")
			}
			req, _ := http.NewRequestWithContext(rctx, http.MethodPut, url, bytes.NewReader(b))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body bytes.Buffer
			_, _ = body.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("PUT /v1/plan: %d %s, want 400", resp.StatusCode, body.String())
			}
			var er kserve.ErrorResponse
			_ = json.Unmarshal(body.Bytes(), &er)
			for _, r := range reasons {
				if !strings.Contains(rerr.Error(), r) {
					t.Errorf("reload: %q lacks check's reason %q", rerr, r)
				}
				if !strings.Contains(er.Error, r) {
					t.Errorf("PUT /v1/plan: %q lacks check's reason %q", er.Error, r)
				}
			}
			if got := s.ActiveDigest(); got != digest {
				t.Errorf("the served plan changed: %s, want %s", got, digest)
			}
		})
	}
}

func prov(m map[string]any) map[string]any { return m["provenance"].(map[string]any) }

// resign records, in a plan a test edited as a JSON tree, the digest of its embedded inputs as
// they now are: the test builds a plan as if solved on those inputs (serve and simulate refuse
// a plan whose inputs were edited after solving, as check does).
func resign(t *testing.T, plan map[string]any) {
	t.Helper()
	raw, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	p, err := formats.DecodeInto[*formats.Plan]("plan", raw, systems.Default().Sections())
	if err != nil {
		return // a plan the test made invalid: its own validation is what the test reads
	}
	d, err := formats.Digest(p.Provenance.Embedded)
	if err != nil {
		t.Fatal(err)
	}
	prov(plan)["input_digest"] = d
}
