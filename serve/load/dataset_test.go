package load

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func fixture(t testing.TB, name string) (string, []byte) {
	t.Helper()
	p := filepath.Join("..", "..", "testdata", "load", name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, b
}

// TestReadDatasets reads each fixture: the entries vllm bench's rules keep, their lengths
// and their recorded times.
func TestReadDatasets(t *testing.T) {
	type e struct {
		at      time.Duration
		in, out int
	}
	for _, tc := range []struct {
		kind, file string
		timed      bool
		want       []e
	}{
		// a2 is too short (< 4 tokens), a3 has one turn; lengths are ⌈characters/4⌉.
		{DatasetShareGPT, "sharegpt.json", false, []e{{0, 16, 26}, {0, 13, 9}}},
		// GPT-4 rows with Response tokens > 0, timed from the first kept row.
		{DatasetBurstGPT, "burstgpt.csv", true, []e{{0, 300, 80}, {3500 * time.Millisecond, 700, 120}, {6 * time.Second, 64, 16}}},
		{DatasetMooncake, "mooncake.jsonl", true, []e{{0, 1000, 20}, {250 * time.Millisecond, 700, 10}, {time.Second, 200, 5}}},
		{DatasetAzure, "azure.csv", true, []e{{0, 120, 20}, {500 * time.Millisecond, 40, 8}, {2 * time.Second, 300, 30}}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			p, data := fixture(t, tc.file)
			d, err := ReadDataset(tc.kind, p, data, 0)
			if err != nil {
				t.Fatal(err)
			}
			if d.Timed != tc.timed || len(d.Entries) != len(tc.want) {
				t.Fatalf("timed %v, %d entries %+v; want %v, %d", d.Timed, len(d.Entries), d.Entries, tc.timed, len(tc.want))
			}
			for i, w := range tc.want {
				g := d.Entries[i]
				if g.At != w.at || g.InputTokens != w.in || g.OutputTokens != w.out {
					t.Errorf("entry %d = at %s in %d out %d, want %+v", i, g.At, g.InputTokens, g.OutputTokens, w)
				}
			}
		})
	}
	p, data := fixture(t, "sharegpt.json")
	d, err := ReadShareGPT(p, data, 7)
	if err != nil || len(d.Entries) != 2 || d.Entries[0].OutputTokens != 7 || !strings.HasPrefix(d.Entries[0].Prompt, "Write a short note") {
		t.Errorf("--sharegpt-output-len 7: %v %+v", err, d)
	}
}

// TestDatasetErrors: a wrong file is an error naming the file, the line and the field.
func TestDatasetErrors(t *testing.T) {
	for _, tc := range []struct {
		kind, data, want string
	}{
		{DatasetShareGPT, `{"id": 1}`, "f:1: want a JSON array"},
		{DatasetShareGPT, "[\n{\"id\": \"x\",\n \"conversations\": [{\"from\": \"human\", \"value\": 5}]}]", "f:3: [0].conversations.value: want string"},
		{DatasetShareGPT, "[\n{\"id\": \"x\"}]", "f:2: [0].conversations: missing"},
		{DatasetShareGPT, "[\n{\"conversations\": [{\"from\": \"human\"}]}]", "[0].conversations[0].value: missing"},
		{DatasetShareGPT, `[{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]}]`, "none of its 1 conversations passes"},
		{DatasetShareGPT, `[{"conversations": []}`, "f:1: unexpected end of file"},
		{DatasetBurstGPT, "Timestamp,Model\n1,GPT-4\n", `f:1: header: no "Request tokens" column`},
		{DatasetBurstGPT, "Model,Request tokens,Response tokens\nGPT-4,10,x\n", `f:2: Response tokens: "x": want an integer`},
		{DatasetBurstGPT, "Model,Request tokens,Response tokens\nGPT-4,10\n", "f:2: Response tokens: missing"},
		{DatasetBurstGPT, "Timestamp,Model,Request tokens,Response tokens\nsoon,GPT-4,10,3\n", `f:2: Timestamp: "soon"`},
		{DatasetBurstGPT, "Model,Request tokens,Response tokens\nChatGPT,10,3\n", "none of its 1 rows is a GPT-4 request"},
		{DatasetBurstGPT, "", "f:1: header: empty file"},
		{DatasetMooncake, "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n{\"timestamp\": 1, \"output_length\": 1}\n", "f:2: input_length: missing"},
		{DatasetMooncake, `{"timestamp": "x", "input_length": 5, "output_length": 1}`, "f:1: timestamp: want float64"},
		{DatasetMooncake, `{"timestamp": 0, "input_length": 5, "output_length": 0}`, "f:1: output_length: 0: must be in [1,"},
		{DatasetMooncake, `{"timestamp": 0, "input_length": 5, "output_length": 2, "hash_ids": [1, 2]}`, "f:1: hash_ids: 2 ids for input_length 5"},
		{DatasetMooncake, `[1]`, "f:1: not a JSON object"},
		{DatasetMooncake, "\n", "f: no requests"},
		{DatasetAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.0,0,3\n", "f:2: ContextTokens"},
		{"nope", "", `--dataset-name: "nope"`},
	} {
		_, err := ReadDataset(tc.kind, "f", []byte(tc.data), 0)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %q: error %v, want one containing %q", tc.kind, tc.data, err, tc.want)
		}
	}
}

// TestSampleAndRandom: sampling is seeded (same seed, same requests), oversamples a short
// dataset, keeps a trace's order; random lengths stay in vllm bench's range.
func TestSampleAndRandom(t *testing.T) {
	d := &Dataset{Name: DatasetBurstGPT}
	for i := range 10 {
		d.Entries = append(d.Entries, DatasetEntry{InputTokens: i + 1, OutputTokens: 1})
	}
	a, b := d.Sample(25, 3), d.Sample(25, 3)
	if len(a) != 25 || a[0].InputTokens != b[0].InputTokens || a[24].InputTokens != b[24].InputTokens {
		t.Errorf("sample not 25 long or not seeded: %v %v", a, b)
	}
	seen := map[int]bool{}
	for _, e := range a[:10] {
		seen[e.InputTokens] = true
	}
	if len(seen) != 10 {
		t.Errorf("the first 10 of a shuffled sample repeat an entry: %v", a[:10])
	}
	d.Name = DatasetMooncake
	if s := d.Sample(4, 3); len(s) != 4 || s[3].InputTokens != 4 {
		t.Errorf("a trace's sample is not its first entries: %v", s)
	}
	if s := d.Sample(40, 3); len(s) != 10 {
		t.Errorf("a trace's sample longer than the trace: %d", len(s))
	}
	r, err := RandomDataset(500, 100, 10, 0.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := 1000, 0
	for _, e := range r.Entries {
		lo, hi = min(lo, e.InputTokens), max(hi, e.InputTokens)
		if e.OutputTokens < 5 || e.OutputTokens > 15 {
			t.Fatalf("output %d outside [5, 15]", e.OutputTokens)
		}
	}
	if lo < 50 || hi > 150 || hi-lo < 80 {
		t.Errorf("input lengths in [%d, %d], want spread over [50, 150]", lo, hi)
	}
	if r, _ := RandomDataset(3, 64, 8, 0, 1); r.Entries[2].InputTokens != 64 || r.Entries[2].OutputTokens != 8 {
		t.Errorf("range ratio 0: %+v", r.Entries[2])
	}
	for _, bad := range []struct {
		in, out int
		r       float64
	}{{0, 1, 0}, {1, 0, 0}, {1, 1, 1}, {1, 1, math.NaN()}} {
		if _, err := RandomDataset(1, bad.in, bad.out, bad.r, 1); err == nil {
			t.Errorf("RandomDataset(%v) accepted", bad)
		}
	}
}

// TestGammaArrivals: vllm bench's schedule: the last arrival at n/rate, non-decreasing, the
// same for the same seed; burstiness < 1 is burstier (a larger spread of gaps) than Poisson;
// an infinite rate sends all at 0.
func TestGammaArrivals(t *testing.T) {
	cv := func(at []time.Duration) float64 {
		var gaps []float64
		prev := time.Duration(0)
		for _, a := range at {
			gaps = append(gaps, float64(a-prev))
			prev = a
		}
		var m, v float64
		for _, g := range gaps {
			m += g
		}
		m /= float64(len(gaps))
		for _, g := range gaps {
			v += (g - m) * (g - m)
		}
		return math.Sqrt(v/float64(len(gaps))) / m
	}
	for _, tc := range []struct {
		b          float64
		cvLo, cvHi float64
	}{{1, 0.85, 1.15}, {0.25, 1.6, 2.4}, {4, 0.4, 0.6}} {
		at := gammaArrivals(4000, 50, tc.b, 7)
		if d := at[len(at)-1] - 80*time.Second; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("burstiness %g: last arrival %s, want 80s (n/rate)", tc.b, at[len(at)-1])
		}
		for i := 1; i < len(at); i++ {
			if at[i] < at[i-1] {
				t.Fatalf("burstiness %g: arrivals go back at %d", tc.b, i)
			}
		}
		// CV of gamma gaps is 1/sqrt(shape).
		if c := cv(at); c < tc.cvLo || c > tc.cvHi {
			t.Errorf("burstiness %g: gap CV %.3f, want in [%g, %g]", tc.b, c, tc.cvLo, tc.cvHi)
		}
		if again := gammaArrivals(4000, 50, tc.b, 7); again[1234] != at[1234] {
			t.Errorf("burstiness %g: not seeded", tc.b)
		}
	}
	for _, a := range gammaArrivals(5, math.Inf(1), 1, 1) {
		if a != 0 {
			t.Fatal("rate inf: an arrival after 0")
		}
	}
}

// TestBlockPrompt: equal hash ids give equal blocks (a shared prefix), the prompt has its
// input length in words, and the tail past the ids is the request's own.
func TestBlockPrompt(t *testing.T) {
	words := func(s string) []string { return strings.Fields(s) }
	a := words(BlockPrompt(1, 0, []int64{0, 1}, 1000))
	b := words(BlockPrompt(1, 1, []int64{0, 2}, 700))
	if len(a) != 1000 || len(b) != 700 {
		t.Fatalf("lengths %d %d, want 1000 700", len(a), len(b))
	}
	if strings.Join(a[:512], " ") != strings.Join(b[:512], " ") {
		t.Error("hash id 0 gives two different blocks")
	}
	if strings.Join(a[512:700], " ") == strings.Join(b[512:], " ") {
		t.Error("hash ids 1 and 2 give the same block")
	}
	c := words(BlockPrompt(1, 5, []int64{0}, 600))
	d := words(BlockPrompt(1, 6, []int64{0}, 600))
	if strings.Join(c[512:], " ") == strings.Join(d[512:], " ") {
		t.Error("tokens past the ids are shared between requests")
	}
}
