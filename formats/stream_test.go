package formats

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestStreamingParseMatchesTree: a JSON document the streaming pass
// accepts decodes to exactly what the tree path decodes, and every document the tree path
// refuses (or must take sections out of) is left to it. Run on every JSON document under
// testdata and on mutations of the check's rules.
func TestStreamingParseMatchesTree(t *testing.T) {
	var files []string
	filepath.WalkDir(filepath.Join("..", "testdata"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") {
			files = append(files, p)
		}
		return nil
	})
	docs := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = data
	}
	const tr = `{"apiVersion": "plan/v1", "kind": "Trace", "metadata": {"name": "t"}, "requests": [%s]}`
	for name, body := range map[string]string{
		"good":            `{"t_us": 1, "target": "m"}`,
		"wrong case":      `{"T_US": 1}`,
		"missing t_us":    `{"target": "m"}`,
		"null string":     `{"t_us": 1, "target": null}`,
		"float for int":   `{"t_us": 1.5}`,
		"int overflow":    `{"t_us": 1e30}`,
		"string for int":  `{"t_us": "1"}`,
		"duplicate":       `{"t_us": 1, "t_us": 2}`,
		"unknown field":   `{"t_us": 1, "bogus": 2}`,
		"trailing":        `{"t_us": 1}]} {"x": 1`,
		"null element":    `null`,
		"array for field": `{"t_us": [1]}`,
	} {
		docs["mutation "+name] = []byte(strings.Replace(tr, "%s", body, 1))
	}
	// Arrays past minPresized are made at full size before decoding: the same document.
	docs["large arrays"] = []byte(`{"apiVersion": "plan/v1", "kind": "Trace", "metadata": {"name": "t"}, "requests": [` +
		strings.Repeat(`{"t_us": 1, "target": "m"}, `, 2*minPresized) + `{"t_us": 2}]}`)
	docs["bad duration"] = []byte(`{"apiVersion": "plan/v1", "kind": "Trace", "metadata": {"name": "t"}, "counts": {"interval": "5 parsecs", "counts": [1]}}`)
	docs["wrong apiVersion"] = []byte(`{"apiVersion": "plan/v2", "kind": "Trace", "metadata": {"name": "t"}, "requests": [{"t_us": 1}]}`)
	docs["kind spelt Kind"] = []byte(`{"apiVersion": "plan/v1", "Kind": "Trace", "metadata": {"name": "t"}, "requests": [{"t_us": 1}]}`)
	accepted := 0
	for name, data := range docs {
		treeOnly = true
		want, wantErr := parse(name, data, "", inTree)
		treeOnly = false
		got, ok := parseJSONStream(data, "")
		switch {
		case wantErr != nil && ok:
			t.Errorf("%s: the streaming pass accepted what the tree path refuses: %v", name, wantErr)
		case wantErr == nil && ok && !reflect.DeepEqual(got, want):
			t.Errorf("%s: the two paths decode differently", name)
		case wantErr == nil && !ok && strings.HasPrefix(string(bytesTrimSpace(data)), "{") && !hasRegisteredSections(want):
			// A system's registered section is decoded by its own Section: the tree path's.
			t.Errorf("%s: a JSON document the tree path accepts was left to it", name)
		case ok:
			accepted++
		}
		if tr, isTrace := got.(*Trace); ok && isTrace && len(tr.Requests) > minPresized && cap(tr.Requests) != len(tr.Requests) {
			t.Errorf("%s: %d requests in a slice of capacity %d: not made at full size", name, len(tr.Requests), cap(tr.Requests))
		}
	}
	if accepted < 20 {
		t.Errorf("only %d documents took the streaming pass", accepted)
	}
}

func bytesTrimSpace(b []byte) string { return strings.TrimSpace(string(b)) }

// BenchmarkParseLargeTrace measures the peak heap of parsing a generated trace of 200,000
// requests (about 6.5 MB), streaming and through the tree, as a multiple of the file's size.
// Measured on a 98 MB trace of 3 M requests (`plan validate`, /usr/bin/time -v): 2.63 GB
// RSS and 58 s through the tree, 1.02 GB and 28 s streaming, 695 MB and 6.6 s with large
// arrays made at full size (a shared machine: times vary).
func BenchmarkParseLargeTrace(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"apiVersion": "plan/v1", "kind": "Trace", "metadata": {"name": "big"}, "requests": [`)
	for i := 0; i < 200000; i++ {
		if i > 0 {
			sb.WriteString(",\n")
		}
		sb.WriteString(`{"t_us": 12345678, "target": "m0"}`)
	}
	sb.WriteString("]}\n")
	data := []byte(sb.String())
	for _, tree := range []bool{false, true} {
		name := "stream"
		if tree {
			name = "tree"
		}
		b.Run(name, func(b *testing.B) {
			treeOnly = tree
			defer func() { treeOnly = false }()
			var peak uint64
			for b.Loop() {
				stop := sampleHeap(&peak)
				if _, err := Parse("big.json", data, inTree); err != nil {
					b.Fatal(err)
				}
				stop()
			}
			b.ReportMetric(float64(peak)/float64(len(data)), "peak-heap/file")
		})
	}
}

// sampleHeap records the largest HeapInuse seen until stop is called.
func sampleHeap(peak *uint64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	go func() {
		defer close(finished)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > base.HeapInuse && m.HeapInuse-base.HeapInuse > *peak {
				*peak = m.HeapInuse - base.HeapInuse
			}
			select {
			case <-done:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	return func() { close(done); <-finished }
}

// hasRegisteredSections reports whether doc carries sections its systems register (not
// formats' typed fields): those documents take the tree path by design.
func hasRegisteredSections(doc Document) bool {
	switch d := doc.(type) {
	case *Plan:
		return len(d.Sections) > 0 || (d.Provenance.Embedded != nil && d.Provenance.Embedded.Workload != nil && len(d.Provenance.Embedded.Workload.Sections) > 0)
	case *Workload:
		return len(d.Sections) > 0
	}
	return false
}
