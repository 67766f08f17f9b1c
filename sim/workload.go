package sim

import (
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
)

// The arrival processes and the report format live in dataplane/workload, below both sim and
// serve/load (`plan load` generates the simulator's arrivals and reports in its format
// without importing the simulator: the layering rule). sim keeps its names.

type (
	// Source yields arrival times (workload.Source).
	Source = workload.Source
	// ArrivalSpec describes an arrival process (workload.ArrivalSpec).
	ArrivalSpec = workload.ArrivalSpec
	// Times replays fixed arrival times (workload.Times).
	Times = workload.Times
	// Report is a load sweep's result (workload.Report).
	Report = workload.Report
	// AppRate names an application's base rate (workload.AppRate).
	AppRate = workload.AppRate
	// Point is one load factor's result (workload.Point).
	Point = workload.Point
	// Metrics are one run's results (workload.Metrics).
	Metrics = workload.Metrics
	// AppMetrics are one application's outcomes (workload.AppMetrics).
	AppMetrics = workload.AppMetrics
	// PercentileLatency is the latency at an SLO's percentile.
	PercentileLatency = workload.PercentileLatency
	// DropCount counts drops at one stage for one reason (workload.DropCount).
	DropCount = workload.DropCount
	// LLMMetrics are an LLM class's token timings (workload.LLMMetrics).
	LLMMetrics = workload.LLMMetrics
	// RequestRecord is one request's life (workload.RequestRecord).
	RequestRecord = workload.RequestRecord
	// Latency summarizes latencies (workload.Latency).
	Latency = workload.Latency
	// Utilization is a GPU group's busy share (workload.Utilization).
	Utilization = workload.Utilization
)

// ReportKind is the kind written into simulation (and `plan load`) reports.
const ReportKind = workload.ReportKind

// ParseTraceFlag reads a --trace value (workload.ParseTraceFlag).
func ParseTraceFlag(s string) (ArrivalSpec, error) { return workload.ParseTraceFlag(s) }

// ParseArrival parses a generator's --trace value (workload.ParseArrival).
func ParseArrival(s string) (ArrivalSpec, error) { return workload.ParseArrival(s) }

// DecodeTrace decodes a trace file's bytes (workload.DecodeTrace).
func DecodeTrace(name string, data []byte) (ArrivalSpec, error) {
	return workload.DecodeTrace(name, data)
}

// LoadTrace reads a trace file (workload.LoadTrace).
func LoadTrace(path string) (ArrivalSpec, error) { return workload.LoadTrace(path) }

// PointSeed is a load point's per-application seed (workload.PointSeed).
func PointSeed(seed uint64, load float64, app int) uint64 {
	return workload.PointSeed(seed, load, app)
}

// MaxLoadAt is the highest load meeting target (workload.MaxLoadAt).
func MaxLoadAt(points []Point, target float64) float64 { return workload.MaxLoadAt(points, target) }

// MaxLoadAtMean is MaxLoadAt on the mean attainment (workload.MaxLoadAtMean).
func MaxLoadAtMean(points []Point, target float64) float64 {
	return workload.MaxLoadAtMean(points, target)
}

// MaxLoadAtApp is MaxLoadAt for one application (workload.MaxLoadAtApp).
func MaxLoadAtApp(points []Point, app int, target float64) float64 {
	return workload.MaxLoadAtApp(points, app, target)
}

// Summarize is the latency summary of samples in µs (workload.Summarize).
func Summarize(us []float64) Latency { return workload.Summarize(us) }

func round6(x float64) float64 { return workload.Round6(x) }

// TraceSpec is the spec of a decoded trace (workload.TraceSpec).
func TraceSpec(name string, t *formats.Trace) (ArrivalSpec, error) {
	return workload.TraceSpec(name, t)
}
