package onnx

import (
	"testing"

	"github.com/plan-dev/plan/profiler/zoo"
)

// BenchmarkBuildDemo materializes the demo CNN with random weights.
func BenchmarkBuildDemo(b *testing.B) {
	g, err := zoo.Build("demo")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		data, err := Build(g, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
	}
}

// BenchmarkParseGraphDemo parses the demo model and infers its shapes.
func BenchmarkParseGraphDemo(b *testing.B) {
	g, err := zoo.Build("demo")
	if err != nil {
		b.Fatal(err)
	}
	data, err := Build(g, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Graph(nil); err != nil {
			b.Fatal(err)
		}
	}
}
