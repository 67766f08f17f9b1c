package formats

import (
	"bytes"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkDecodeTrace decodes and validates a JSON trace of 100,000 requests.
func BenchmarkDecodeTrace(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString(`{"apiVersion":"plan/v1","kind":"Trace","metadata":{},"requests":[`)
	for i := 0; i < 100000; i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"t_us":` + strconv.Itoa(i*10) + `,"target":"resnet50"}`)
	}
	buf.WriteString("]}")
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Decode("trace.json", buf.Bytes(), inTree); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeWorkloadYAML decodes and validates the good workload fixture (YAML).
func BenchmarkDecodeWorkloadYAML(b *testing.B) {
	data := readFixture(b, filepath.Join(goodDir, "workload.yaml"))
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Decode("workload.yaml", data, inTree); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeCascadePlan decodes and validates a large plan: CascadeServe's golden plan,
// whose embedded workload holds every validation record (400 KB).
func BenchmarkDecodeCascadePlan(b *testing.B) {
	data := readFixture(b, "../testdata/cascade/golden-plan.json")
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Decode("plan.json", data, inTree); err != nil {
			b.Fatal(err)
		}
	}
}
