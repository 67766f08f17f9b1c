package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runsched "github.com/plan-dev/plan/internal/run/schedule"
	"github.com/plan-dev/plan/planner/schedule"
)

// scheduleReport is what `plan simulate SCHEDULE` prints with -O json (internal/run/schedule).
type scheduleReport = runsched.Report

var (
	benchDayHours  = flag.Int("bench-day-hours", 24, "BenchmarkDaySchedule: hours of the day series to plan and simulate (24 = a whole day)")
	benchDayWindow = flag.String("bench-day-window", "1h", "BenchmarkDaySchedule: the schedule's window")
	benchDayTrace  = flag.String("bench-day-trace", "", "BenchmarkDaySchedule: a rate trace CSV of your own instead of the built-in day series (columns time_s,m0,m1 for the ppipe case, time_s,chat,summarize for qlm: run one with -bench DaySchedule/ppipe)")
)

// BenchmarkDaySchedule measures what a schedule of plans saves: on a day-long rate series (schedule.Diurnal:
// a sinusoid whose trough, at 04:00, is 25% of its top, at 16:00, with the Azure conversation
// trace's minute-scale bursts laid on it, model m1 29 minutes out of phase with m0), the
// schedule of hourly least-cost PPipe (and QLM) plans (p99 minute × 1.1) costs ≥ 30% less than the
// peak plan all day, and its attainment in the replay (plans loaded one minute ahead of each
// window) is ≥ 99% of the peak plan's. It reports saving_%, attainment_%, peak_attainment_%
// and relative_attainment_%; run it once:
//
//	go test ./cmd/plan/internal/cli -run '^$' -bench DaySchedule -benchtime 1x
//	go test ./cmd/plan/internal/cli -run '^$' -bench DaySchedule/ppipe -benchtime 1x -bench-day-trace day.csv
//
// Recorded (2026-11-24, 2 shared cores; the replay is sim.Switched: a plan is cut only
// where a switch takes over, and the schedule and the peak plan replay the same requests):
//   - ppipe (m0, m1 at 80, 160 req/s at the top; 81 s): 24 hourly plans of 3–11 L4 (4 windows
//     keep the previous plan) against 11 L4 all day; cost 94.25 USD (1.29 of it the switches'
//     overlap) against 147.8: saving 36.2%; attainment 99.79% against the peak plan's
//     100.00% (99.79% of it) over 12,947,108 requests.
//   - qlm (chat, summarize at 8, 2 req/s at the top; 76 s): cost 217.0 USD against 307.2
//     for the peak plan all day: saving 29.4%; attainment 99.98% against the peak plan's
//     99.99% (99.99% of it) over 539,700 requests.
//
// Bursts: Azure Public Dataset, "Azure LLM inference trace 2023" (CC-BY 4.0), Patel et al.,
// Splitwise, ISCA 2024.
func BenchmarkDaySchedule(b *testing.B) {
	b.Chdir(filepath.Join("..", "..", "..", ".."))
	for _, c := range []struct {
		name    string
		targets []string
		top     []float64
		inputs  []string
	}{
		{name: "ppipe", targets: []string{"m0", "m1"}, top: []float64{80, 160}, inputs: []string{"--profile", "testdata/ppipe/profile.json",
			"--cluster", "testdata/cost/cluster-priced.yaml", "--workload", "testdata/cost/workload.yaml"}},
		{name: "qlm", targets: []string{"chat", "summarize"}, top: []float64{8, 2}, inputs: []string{"--profile", "testdata/cost/llm-profile.json",
			"--cluster", "testdata/cost/cluster-llm.yaml", "--workload", "testdata/cost/workload-llm.yaml"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			day := benchDay(b, schedule.Diurnal{Targets: c.targets, Top: c.top, Trough: 0.25, Bursts: schedule.AzureConvBursts, Offsets: []int{0, 29}})
			sched := filepath.Join(b.TempDir(), "schedule.json")
			for range b.N {
				benchDayOnce(b, append(append([]string{"solve", "-q", "--objective", "cost"}, c.inputs...), "--trace", day, "--window", *benchDayWindow, "-o", sched),
					[]string{"simulate", sched, "--trace", day, "--output", "json"})
			}
		})
	}
}

// benchDay writes the day series d (or names the user's -bench-day-trace) and says which.
func benchDay(b *testing.B, d schedule.Diurnal) string {
	if *benchDayTrace != "" {
		day := *benchDayTrace
		if !filepath.IsAbs(day) {
			day = filepath.Join("cmd", "plan", "internal", "cli", day)
		}
		b.Logf("trace: %s (yours)", day)
		return day
	}
	day := filepath.Join(b.TempDir(), "day.csv")
	r := d.Rates("day.csv")
	r.Rates = r.Rates[:*benchDayHours*60]
	f, err := os.Create(day)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := r.WriteCSV(f, "BenchmarkDaySchedule: diurnal sinusoid (trough 25% at 04:00) × Azure LLM 2023 conversation minute bursts (CC-BY 4.0, Patel et al., Splitwise, ISCA 2024)"); err != nil {
		b.Fatal(err)
	}
	b.Log("trace: a diurnal sinusoid (trough 25% of its top) × minute bursts of the Azure Public Dataset's Azure LLM inference trace 2023 (CC-BY 4.0; Patel et al., Splitwise, ISCA 2024)")
	return day
}

// benchDayOnce solves the schedule, replays it and reports the numbers.
func benchDayOnce(b *testing.B, solve, simulate []string) {
	code, _, stderr := benchRun(solve...)
	if strings.Contains(stderr, "HiGHS backend unavailable") {
		b.Skip("HiGHS wasm unavailable")
	}
	if code != ExitOK {
		b.Fatalf("solve: exit %d: %s", code, stderr)
	}
	code, out, stderr := benchRun(simulate...)
	if code != ExitOK {
		b.Fatalf("simulate: exit %d: %s", code, stderr)
	}
	var rep scheduleReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(rep.Saving*100, "saving_%")
	b.ReportMetric(rep.Overall.Attainment*100, "attainment_%")
	b.ReportMetric(rep.Peak.Attainment*100, "peak_attainment_%")
	b.ReportMetric(rep.RelAttainment*100, "relative_attainment_%")
	b.ReportMetric(rep.Cost, "cost")
	b.ReportMetric(rep.PeakCost, "peak_cost")
	b.ReportMetric(float64(rep.Overall.Requests), "requests")
}

func benchRun(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Run(args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}
