package qlm

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/export"
)

// TestServedNamesMatchServe: a client that names a model as `plan serve` answers it (the
// OpenAI model is the class: dataplane/qlm serves an application per class) reaches the
// KServe export's service by the same name. Each service registers one of the classes of
// its instance's model (--model_name), its engine answers and labels its vllm: metrics by
// it (--served-model-name), and its KEDA query counts that label; the header names the
// weights it loads rather than asking to set --model_id, which is set.
func TestServedNamesMatchServe(t *testing.T) {
	p := readPlan(t)
	dep, err := dq.FromPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	var apps []string
	for _, a := range dep.Apps {
		served[a.Name] = true
		apps = append(apps, a.Name)
	}
	files, err := exporter(t, export.KServe).Export(p, export.Options{Name: "qlm-demo"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range files.Names() {
		if !strings.HasPrefix(n, "inferenceservice-") {
			continue
		}
		var s export.InferenceService
		if err := yaml.Unmarshal(files[n], &s); err != nil {
			t.Fatal(err)
		}
		args := s.Spec.Predictor.Model.Args
		name := argOf(args, "--model_name=")
		if !served[name] {
			t.Errorf("%s: --model_name=%s: not a model `plan serve` answers (%v)", n, name, apps)
		}
		if got := argOf(args, "--served-model-name="); got != name {
			t.Errorf("%s: --served-model-name=%s, want %s (vLLM labels its metrics by the first served name)", n, got, name)
		}
		if q := string(files[n]); !strings.Contains(q, `vllm:num_requests_running{model_name="`+name+`"}`) {
			t.Errorf("%s: the KEDA query does not count model_name %q", n, name)
		}
		head := string(files[n][:strings.Index(string(files[n]), "apiVersion:")])
		if strings.Contains(head, "set --model_id") || !strings.Contains(head, "--model_id="+argOf(args, "--model_id=")) {
			t.Errorf("%s: header asks to set --model_id, or does not name it:\n%s", n, head)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{"mistral-chat", "vicuna-chat"}; !slices.Equal(names, want) {
		t.Errorf("services answer %v, want %v (each instance's first class, in its queue order)", names, want)
	}
	// The instance that serves two classes says which name the other one takes.
	if b := string(files["inferenceservice-qlm-demo-llm-0.yaml"]); !strings.Contains(b, `requests of "mistral-batch"`) {
		t.Errorf("llm-0's header does not say how mistral-batch's requests reach it")
	}
}

func argOf(args []string, prefix string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, prefix); ok {
			return v
		}
	}
	return ""
}
