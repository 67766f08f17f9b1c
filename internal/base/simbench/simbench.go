// Package simbench is what the simulator's scale benchmarks share: events per wall second
// and per CPU second, seconds per run and the peak live heap. The simulator's cost should
// grow linearly with GPUs, so events/s should not fall as GPUs are added; on a shared, oversubscribed machine wall
// time overstates the cost, so every benchmark also reports CPU-time rates (user + system
// of the whole process, the garbage collector's work on other cores included).
package simbench

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// Meter accumulates one benchmark's runs. Start it before the loop, Add each run's events,
// optionally SampleHeap after each run, and Report at the end.
type Meter struct {
	b      *testing.B
	cpu0   time.Duration
	events int64
	peak   uint64
}

// Start begins measuring b.
func Start(b *testing.B) *Meter { return &Meter{b: b, cpu0: CPUTime()} }

// Add counts one run's events.
func (m *Meter) Add(events int64) { m.events += events }

// SampleHeap records the live heap now (call it after a run while the run's state is still
// reachable: without compaction a simulation keeps every request, so that is about its peak).
func (m *Meter) SampleHeap() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.peak = max(m.peak, ms.HeapAlloc)
}

// Report adds events/s, s/run, events/cpu-s, cpu-s/run and, when sampled, heap-MB to b.
func (m *Meter) Report() {
	b := m.b
	wall := b.Elapsed().Seconds()
	cpu := (CPUTime() - m.cpu0).Seconds()
	b.ReportMetric(float64(m.events)/wall, "events/s")
	b.ReportMetric(wall/float64(b.N), "s/run")
	b.ReportMetric(float64(m.events)/cpu, "events/cpu-s")
	b.ReportMetric(cpu/float64(b.N), "cpu-s/run")
	if m.peak > 0 {
		b.ReportMetric(float64(m.peak)/(1<<20), "heap-MB")
	}
}

// CPUTime is the process's user + system CPU time (0 where getrusage fails).
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
