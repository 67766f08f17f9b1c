package calibrate

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestReadBenchResult: vLLM's file (no start_times: arrivals regenerated from request_rate,
// a failed request left out, a NaN in a key not read) and plan load's (start_times and e2els,
// an infinite rate with a concurrency cap) read as recorded.
func TestReadBenchResult(t *testing.T) {
	for _, c := range []struct {
		file      string
		n, failed int
		// index, tokens and times of one request
		at                       int
		index, prompt, out       int
		ttft, e2e, tpot, arrival float64
		arrivals                 string
	}{
		{file: "vllm-detailed.json", n: 5, failed: 1, at: 4, index: 5, prompt: 124, out: 11, ttft: 0.029, e2e: 0.137, tpot: 0.0108, arrival: -1, arrivals: "regenerated"},
		{file: "plan-load.json", n: 4, failed: 0, at: 2, index: 2, prompt: 512, out: 2, ttft: 0.045, e2e: 0.056, tpot: 0.011, arrival: 0.05, arrivals: "start_times"},
	} {
		t.Run(c.file, func(t *testing.T) {
			b, err := ReadBenchResult(c.file, readFixture(t, c.file), ReadOptions{MaxModelLen: 4096, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Requests) != c.n || b.Failed != c.failed {
				t.Fatalf("%d requests, %d failed; want %d, %d", len(b.Requests), b.Failed, c.n, c.failed)
			}
			r := b.Requests[c.at]
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
			if r.Index != c.index || r.PromptTokens != c.prompt || r.OutputTokens != c.out || !near(r.TTFT, c.ttft) || !near(r.E2E, c.e2e) {
				t.Errorf("request %+v, want index %d, %d→%d tokens, ttft %g, e2e %g", r, c.index, c.prompt, c.out, c.ttft, c.e2e)
			}
			if m, ok := r.TPOT(); !ok || !near(m, c.tpot) {
				t.Errorf("tpot %g %v, want %g", m, ok, c.tpot)
			}
			if c.arrival >= 0 && !near(r.Arrival, c.arrival) {
				t.Errorf("arrival %g, want %g", r.Arrival, c.arrival)
			}
			if !strings.HasPrefix(b.Arrivals, c.arrivals) {
				t.Errorf("arrivals %q, want %s…", b.Arrivals, c.arrivals)
			}
			for i := 1; i < len(b.Requests); i++ {
				if b.Requests[i].Arrival < b.Requests[i-1].Arrival {
					t.Errorf("request %d arrives at %g, before request %d (%g)", i, b.Requests[i].Arrival, i-1, b.Requests[i-1].Arrival)
				}
			}
		})
	}
}

// TestRegeneratedArrivals: without start_times the arrivals follow vLLM's client: every
// request at 0 at an infinite rate, the last at n/rate at a finite one, one gap apart at an
// infinite burstiness, and held to max_concurrency on the measured latencies.
func TestRegeneratedArrivals(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{
			"input_lens": []int{10, 10, 10, 10}, "output_lens": []int{2, 2, 2, 2}, "ttfts": []float64{0.1, 0.1, 0.1, 0.1},
			"itls": [][]float64{{0.9}, {0.9}, {0.9}, {0.9}}, "errors": []string{"", "", "", ""},
		}
	}
	for _, c := range []struct {
		name string
		set  map[string]any
		want []float64
	}{
		{"inf", map[string]any{"request_rate": "inf"}, []float64{0, 0, 0, 0}},
		{"constant gaps", map[string]any{"request_rate": 2.0, "burstiness": "Infinity"}, []float64{0.5, 1, 1.5, 2}},
		{"inf capped at 2", map[string]any{"request_rate": "inf", "max_concurrency": 2}, []float64{0, 0, 1, 1}},
		{"linear ramp-up", map[string]any{"ramp_up_strategy": "linear", "ramp_up_start_rps": 1, "ramp_up_end_rps": 1, "burstiness": "Infinity"}, []float64{1, 2, 3, 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := base()
			for k, v := range c.set {
				doc[k] = v
			}
			data, _ := json.Marshal(doc)
			b, err := ReadBenchResult("r.json", data, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range b.Requests {
				if math.Abs(r.Arrival-c.want[i]) > 1e-9 {
					t.Errorf("request %d at %g s, want %g", i, r.Arrival, c.want[i])
				}
			}
		})
	}
	// A finite rate: gamma gaps, rescaled so the last is at n/rate (vLLM's normalisation).
	doc := base()
	doc["request_rate"] = 4.0
	data, _ := json.Marshal(doc)
	b, err := ReadBenchResult("r.json", data, ReadOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if last := b.Requests[3].Arrival; math.Abs(last-1) > 1e-9 {
		t.Errorf("last arrival %g, want 1 (4 requests at 4/s)", last)
	}
}

// badCases are runs the reader must refuse, each an edit of a good file: the error names the
// file, the field and the value.
var badCases = []struct {
	name string
	edit func(m map[string]any)
	want []string
}{
	{"past max_model_len", func(m map[string]any) { m["input_lens"].([]any)[1] = 4095 }, []string{"input_lens[1] + output_lens[1]: 4098", "max_model_len 4096"}},
	{"rate 0", func(m map[string]any) { m["request_rate"] = 0 }, []string{"request_rate: 0: ", "must be > 0"}},
	{"rate negative", func(m map[string]any) { m["request_rate"] = -2.5 }, []string{"request_rate: -2.5: "}},
	{"rate NaN", func(m map[string]any) { m["request_rate"] = "__NaN__" }, []string{"request_rate: NaN: "}},
	{"rate a word", func(m map[string]any) { m["request_rate"] = "fast" }, []string{"request_rate: \"fast\""}},
	{"rate missing", func(m map[string]any) { delete(m, "request_rate") }, []string{"request_rate: missing"}},
	{"no ttfts", func(m map[string]any) { delete(m, "ttfts") }, []string{"ttfts: missing or empty", "--save-detailed"}},
	{"empty ttfts", func(m map[string]any) { m["ttfts"] = []any{} }, []string{"ttfts: missing or empty"}},
	{"no itls", func(m map[string]any) { delete(m, "itls") }, []string{"itls: missing or empty"}},
	{"short output_lens", func(m map[string]any) { m["output_lens"] = m["output_lens"].([]any)[:2] }, []string{"output_lens: 2 entries: ttfts has 3"}},
	{"long errors", func(m map[string]any) { m["errors"] = []any{"", "", "", ""} }, []string{"errors: 4 entries: ttfts has 3"}},
	{"NaN ttft", func(m map[string]any) { m["ttfts"].([]any)[2] = "__NaN__" }, []string{"ttfts[2]: NaN: "}},
	{"infinite ttft", func(m map[string]any) { m["ttfts"].([]any)[0] = "__Infinity__" }, []string{"ttfts[0]: Infinity: "}},
	{"negative ttft", func(m map[string]any) { m["ttfts"].([]any)[1] = -0.5 }, []string{"ttfts[1]: -0.5: "}},
	{"null ttft", func(m map[string]any) { m["ttfts"].([]any)[1] = nil }, []string{"ttfts[1]: null"}},
	{"zero ttft", func(m map[string]any) { m["ttfts"].([]any)[0] = 0 }, []string{"ttfts[0]: 0: ", "did not stream"}},
	{"negative itl", func(m map[string]any) { m["itls"].([]any)[0].([]any)[1] = -0.01 }, []string{"itls[0][1]: -0.01: "}},
	{"NaN itl", func(m map[string]any) { m["itls"].([]any)[1].([]any)[0] = "__NaN__" }, []string{"itls[1][0]: NaN: "}},
	{"fractional tokens", func(m map[string]any) { m["input_lens"].([]any)[0] = 1.5 }, []string{"input_lens[0]: 1.5: ", "whole number"}},
	{"zero prompt", func(m map[string]any) { m["input_lens"].([]any)[2] = 0 }, []string{"input_lens[2]: 0: "}},
	{"burstiness 0", func(m map[string]any) { m["burstiness"] = 0 }, []string{"burstiness: 0: "}},
	{"max_concurrency 0", func(m map[string]any) { m["max_concurrency"] = 0 }, []string{"max_concurrency: 0: "}},
	{"completed off", func(m map[string]any) { m["completed"] = 7 }, []string{"completed: 7: ", "3 successful"}},
	{"all failed", func(m map[string]any) { m["errors"] = []any{"x", "y", "z"}; delete(m, "completed") }, []string{"errors: all 3 requests failed"}},
	{"e2e before ttft", func(m map[string]any) { m["e2els"] = []any{0.01, 0.2, 0.2} }, []string{"e2els[0]: 0.01: "}},
	{"start_times NaN", func(m map[string]any) { m["start_times"] = []any{1, "__NaN__", 2} }, []string{"start_times[1]: NaN: "}},
	{"start_times a year apart", func(m map[string]any) { m["start_times"] = []any{0, 1, 4e7} }, []string{"start_times[2]: 40000000: "}},
	{"ramp-up unknown", func(m map[string]any) { m["ramp_up_strategy"] = "step" }, []string{"ramp_up_strategy: \"step\""}},
	{"ramp-up without end", func(m map[string]any) { m["ramp_up_strategy"] = "linear"; m["ramp_up_start_rps"] = 1 }, []string{"ramp_up_end_rps: missing"}},
	{"more gaps than tokens", func(m map[string]any) { m["itls"].([]any)[2] = []any{0.01, 0.01} }, []string{"itls[2]: 2 gaps: output_lens[2] is 2", "at most 1 gaps"}},
	{"no output tokens", func(m map[string]any) { m["output_lens"].([]any)[1] = 0 }, []string{"output_lens[1]: 0: ", "succeeded"}},
	{"all outputs zero", func(m map[string]any) { m["output_lens"] = []any{0, 0, 0} }, []string{"output_lens[0]: 0: "}},
	{"NaN ttft of a failed request read", func(m map[string]any) { m["ttfts"].([]any)[0] = "__NaN__"; m["errors"].([]any)[1] = "x" }, []string{"ttfts[0]: NaN"}},
	{"array for a number", func(m map[string]any) { m["input_lens"].([]any)[0] = []any{1} }, []string{"input_lens[0]: \"[1]\""}},
}

// goodRun is the file badCases edit: three successful requests at 4 requests/s.
const goodRun = `{"model_id": "m", "request_rate": 4.0, "burstiness": 1.0, "max_concurrency": null, "completed": 3,
 "input_lens": [100, 200, 300], "output_lens": [3, 3, 2], "ttfts": [0.05, 0.06, 0.07],
 "itls": [[0.01, 0.01], [0.01, 0.02], [0.01]], "errors": ["", "", ""]}`

// TestReadBenchResultRefuses: every bad input of badCases is an error naming the file, the
// field and the value.
func TestReadBenchResultRefuses(t *testing.T) {
	for _, c := range badCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadBenchResult("run.json", editRun(t, c.edit), ReadOptions{MaxModelLen: 4096, LimitFrom: "the test's"})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range append([]string{"run.json: "}, c.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	for _, c := range []struct{ name, data, want string }{
		{"not JSON", "{\"ttfts\": [", "run.json: "},
		{"duplicate key", `{"ttfts": [1], "ttfts": [2]}`, "duplicate key \"ttfts\""},
		{"a list", `[1, 2]`, "run.json: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadBenchResult("run.json", []byte(c.data), ReadOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "run.json: ") {
				t.Errorf("error %v, want one naming run.json and saying %q", err, c.want)
			}
		})
	}
}

// TestReadBenchResultIgnores: a failed request's fields, and the summary keys the fit does not
// read (a NaN std_ttft_ms, as vLLM writes for a run of one request), are not checked.
func TestReadBenchResultIgnores(t *testing.T) {
	data := editRun(t, func(m map[string]any) {
		m["std_ttft_ms"], m["mean_itl_ms"] = "__NaN__", "__Infinity__"
		m["errors"].([]any)[1] = "Bad Request"
		m["completed"] = 2
		m["output_lens"].([]any)[1] = 0
		m["ttfts"].([]any)[1] = "__NaN__"
		m["itls"].([]any)[1] = []any{-1, 2, 3, 4, 5}
	})
	b, err := ReadBenchResult("run.json", data, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Requests) != 2 || b.Failed != 1 || b.Requests[1].Index != 2 {
		t.Errorf("%d requests (%d failed), want 2 (1)", len(b.Requests), b.Failed)
	}
}

// TestReadBenchResultCaps: a run of more than MaxRequests requests is refused by name before
// its requests are checked, and a read whose context is done (SIGTERM) stops with it.
func TestReadBenchResultCaps(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(`{"request_rate": 1, "ttfts": [`)
	for i := 0; i <= MaxRequests; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString("0.1")
	}
	sb.WriteString(`], "itls": [[]], "input_lens": [1], "output_lens": [1]}`)
	_, err := ReadBenchResult("big.json", []byte(sb.String()), ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "big.json: ttfts: more than 100000 entries") {
		t.Errorf("error %v, want ttfts refused past the cap", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ReadBenchResult("run.json", []byte(goodRun), ReadOptions{Context: ctx})
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "run.json: interrupted") {
		t.Errorf("error %v, want the read interrupted", err)
	}
}

// editRun is goodRun edited, with the strings "__NaN__" and "__Infinity__" written as
// Python's json module writes those floats: bare.
func editRun(t testing.TB, edit func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(goodRun), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(data), `"__NaN__"`, "NaN")
	return []byte(strings.ReplaceAll(s, `"__Infinity__"`, "Infinity"))
}

// TestPythonLiterals: the bare NaN and Infinity of Python's json become strings outside of
// strings only.
func TestPythonLiterals(t *testing.T) {
	for in, want := range map[string]string{
		`{"a": NaN, "b": [Infinity, -Infinity]}`: `{"a": "NaN", "b": ["Infinity", "-Infinity"]}`,
		`{"NaN": "Infinity \" NaN"}`:             `{"NaN": "Infinity \" NaN"}`,
		`{"a": 1}`:                               `{"a": 1}`,
	} {
		if got := string(pythonLiterals([]byte(in))); got != want {
			t.Errorf("pythonLiterals(%s) = %s, want %s", in, got, want)
		}
	}
}

// FuzzReadBenchResult: no input makes the reader panic, and what it accepts is a run the fit
// can replay (requests, finite arrivals in order of the file's send times, positive TTFTs).
func FuzzReadBenchResult(f *testing.F) {
	f.Add(readFixture(f, "vllm-detailed.json"))
	f.Add(readFixture(f, "plan-load.json"))
	f.Add([]byte(goodRun))
	for _, c := range badCases {
		f.Add(editRun(f, c.edit))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ReadBenchResult("fuzz.json", data, ReadOptions{MaxModelLen: 8192, Seed: 1})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.json: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if len(b.Requests) == 0 {
			t.Fatal("accepted a run with no requests")
		}
		for _, r := range b.Requests {
			if !(r.TTFT > 0) || !(r.E2E >= r.TTFT) || !(r.Arrival >= 0 && r.Arrival <= maxSeconds) || r.PromptTokens < 1 || r.OutputTokens < 1 || r.PromptTokens+r.OutputTokens > 8192 {
				t.Fatalf("accepted request %+v", r)
			}
		}
	})
}
