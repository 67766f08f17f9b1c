package kservegrpc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/serve"
)

// grpcurlVersion is the grpcurl .ci/run installs (go install ...@grpcurlVersion).
const grpcurlVersion = "v1.9.4"

// TestGrpcurl runs the real grpcurl (ecosystem digest §7: what operators point at a gRPC
// server) against `--grpc-addr`: `list` through server reflection, a health check, a
// describe, and a ModelInfer built from the reflected schema alone. It
// skips when grpcurl is missing, unless PLAN_REQUIRE_ALL=1 (CI installs it).
func TestGrpcurl(t *testing.T) {
	path := os.Getenv("PATH")
	if gp, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		path = filepath.Join(strings.TrimSpace(string(gp)), "bin") + string(os.PathListSeparator) + path
	}
	t.Setenv("PATH", path)
	bin, err := exec.LookPath("grpcurl")
	if err != nil {
		if os.Getenv("PLAN_REQUIRE_ALL") == "1" {
			t.Fatalf("grpcurl not found: go install github.com/fullstorydev/grpcurl/cmd/grpcurl@%s (PLAN_REQUIRE_ALL=1)", grpcurlVersion)
		}
		t.Skipf("grpcurl not found (go install github.com/fullstorydev/grpcurl/cmd/grpcurl@%s)", grpcurlVersion)
	}
	_, addr := startFull(t, serve.Options{})
	// grpcurl [flags] ADDR [list | describe SYMBOL | METHOD]; -d is the request.
	for _, tc := range []struct {
		name       string
		data, verb []string
		want       []string
	}{
		{"list", nil, []string{"list"}, []string{"inference.GRPCInferenceService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"}},
		{"health", []string{"-d", `{"service":""}`}, []string{"grpc.health.v1.Health/Check"}, []string{`"status": "SERVING"`}},
		{"health of the service", []string{"-d", `{"service":"inference.GRPCInferenceService"}`}, []string{"grpc.health.v1.Health/Check"}, []string{`"status": "SERVING"`}},
		{"describe", nil, []string{"describe", "inference.GRPCInferenceService"}, []string{"rpc ModelInfer", "rpc ServerReady"}},
		{"metadata", []string{"-d", `{"name":"w","version":"1"}`}, []string{"inference.GRPCInferenceService/ModelMetadata"}, []string{`"name": "w"`, `"versions": [`}},
		{"infer", []string{"-d", `{"model_name":"w","inputs":[{"name":"input","datatype":"FP32","shape":[1,4],"contents":{"fp32_contents":[1,2,3,4]}}]}`},
			[]string{"inference.GRPCInferenceService/ModelInfer"}, []string{`"modelVersion": "1"`, `"fp32Contents"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			args := append(append(append([]string{"-plaintext", "-max-time", "30"}, tc.data...), addr), tc.verb...)
			out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("grpcurl %v: %v\n%s", args, err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("grpcurl %v: no %q in\n%s", args, w, out)
				}
			}
		})
	}
}
