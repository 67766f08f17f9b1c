//go:build cgo

package serve

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/internal/fixture/servetest"
	"github.com/plan-dev/plan/internal/fixture/tinycascade"
	"github.com/plan-dev/plan/serve/worker"
)

// TestONNXModelFilesGuarded: --model files went through os.ReadFile, so
// a FIFO blocked start-up forever and /dev/zero grew without bound. They go through the
// guarded reader (onnx.ReadFile): what is not a regular file is refused at once, named.
func TestONNXModelFilesGuarded(t *testing.T) {
	needORT(t)
	fifo := filepath.Join(t.TempDir(), "fifo.onnx")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// A model directory for the cascade whose first model is a FIFO.
	plan := tinyPlan(t)
	dir := t.TempDir()
	for _, n := range tinycascade.Names {
		b, err := os.ReadFile(filepath.Join(tinyDir(), n+".onnx"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n+".onnx"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	first := cascadesec.PlanOf(plan).Gears[0].Models[0]
	os.Remove(filepath.Join(dir, first+".onnx"))
	if err := syscall.Mkfifo(filepath.Join(dir, first+".onnx"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		new  func() error
		want string
	}{
		{"one model, a FIFO", func() error {
			_, err := New(withSystems(Options{Plan: twoPartitionPlan("mlp", 3, 2, 1), NewExecutor: worker.ONNXFactory(worker.ONNXOptions{Model: fifo, Device: "cpu", Cuts: servetest.ONNXCuts})}))
			return err
		}, "named pipe"},
		{"one model, /dev/zero", func() error {
			_, err := New(withSystems(Options{Plan: twoPartitionPlan("mlp", 3, 2, 1), NewExecutor: worker.ONNXFactory(worker.ONNXOptions{Model: "/dev/zero", Device: "cpu", Cuts: servetest.ONNXCuts})}))
			return err
		}, "a device"},
		{"a model directory holding a FIFO", func() error {
			_, err := New(Options{Plan: plan, Deploy: cascadeDeploy, Policies: cascadePolicies,
				NewExecutor: worker.ONNXFactory(worker.ONNXOptions{Model: dir, Device: "cpu", Threads: 1})})
			return err
		}, "cannot be read as a file inside --model"}, // no OS details: the client learns nothing of the host
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- c.new() }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("error %v, want it to say %q", err, c.want)
				}
			case <-time.After(60 * time.Second): // a hang guard, not a timing assertion
				t.Fatal("start-up still blocked after a minute")
			}
		})
	}
}
