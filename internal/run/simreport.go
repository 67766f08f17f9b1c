package run

import (
	"fmt"
	"slices"
	"strings"

	"github.com/plan-dev/plan/internal/base/tables"
	"github.com/plan-dev/plan/sim"
)

// AppNames are the applications (models, classes) whose attainment the table shows apart:
// every one of a plan serving 2 to maxAppColumns of them (one is the total; more would not
// fit a terminal: -O json has them all).
func AppNames(rep *sim.Report) []string {
	var names []string
	seen := map[string]bool{}
	for _, p := range rep.Points {
		for _, a := range p.Apps {
			if !seen[a.Name] {
				seen[a.Name] = true
				names = append(names, a.Name)
			}
		}
	}
	if len(names) < 2 || len(names) > maxAppColumns {
		return nil
	}
	return names
}

const maxAppColumns = 6

// PercentileMs renders a latency at the SLO's percentile: "∞" when more than 1−p of the
// requests were dropped, a "*" when the SLO does not hold at it.
func PercentileMs(pl *sim.PercentileLatency) string {
	if pl == nil {
		return "-"
	}
	s := "∞"
	if pl.LatencyUs >= 0 {
		s = fmt.Sprintf("%.1f", float64(pl.LatencyUs)/1000)
	}
	if !pl.Met {
		s += "*"
	}
	return s
}

// AccuracyLine gives the accuracy over answered requests at each load point, where the
// deployment judges answers (a cascade plan: on its test records when the workload holds
// them, else on the validation records it was planned on), and flags with "*" the points
// below the plan's accuracy target, naming them on a line of their own.
func AccuracyLine(rep *sim.Report) string {
	var parts, below []string
	for _, p := range rep.Points {
		if p.Total.Accuracy != nil {
			s := fmt.Sprintf("%.4f at load %.2f", *p.Total.Accuracy, p.Load)
			if rep.AccuracyTarget > 0 && *p.Total.Accuracy < rep.AccuracyTarget-1e-9 {
				s = fmt.Sprintf("%.4f* at load %.2f", *p.Total.Accuracy, p.Load)
				below = append(below, fmt.Sprintf("%.2f", p.Load))
			}
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	line := fmt.Sprintf("accuracy (answered requests, on the %s): %s", rep.AccuracyOn, strings.Join(parts, ", "))
	if len(below) > 0 {
		line += fmt.Sprintf("\n* below the plan's accuracy target %.4f at load %s", rep.AccuracyTarget, strings.Join(below, ", "))
	}
	return line
}

// ms3 renders a latency's p50/p90/p99 in ms.
func ms3(l sim.Latency) string {
	if l == (sim.Latency{}) {
		return "-" // no sample
	}
	return fmt.Sprintf("%.1f/%.1f/%.1f", float64(l.P50Us)/1000, float64(l.P90Us)/1000, float64(l.P99Us)/1000)
}

func meanMs(l sim.Latency) string {
	if l == (sim.Latency{}) {
		return "-"
	}
	return fmt.Sprintf("%.1f", l.MeanUs/1000)
}

// tokensPerS is "-" where no output token is known (`plan load` with generated arrivals sends
// no tokens: the server draws them).
func tokensPerS(l *sim.LLMMetrics) string {
	if l.OutputTokens == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", l.OutputTokensPerS)
}

// PrintLLMTable prints, per load point and class, what users of LLM serving read (LLM engine
// digest §3): TTFT, TPOT and E2E percentiles and means, and output tokens per second.
func PrintLLMTable(app *IO, points []sim.Point) {
	var rows [][]string
	unstamped := false
	for _, p := range points {
		apps := append(append([]sim.AppMetrics(nil), p.Apps...), p.Total)
		if len(p.Apps) == 1 {
			apps = p.Apps
		}
		for _, a := range apps {
			l := a.LLM
			if l == nil {
				continue
			}
			unstamped = unstamped || l.Unstamped > 0
			rows = append(rows, []string{fmt.Sprintf("%.2f", p.Load), a.Name,
				ms3(l.TTFT), ms3(l.TPOT), ms3(a.Latency),
				meanMs(l.TTFT) + "/" + meanMs(l.TPOT) + "/" + meanMs(a.Latency),
				tokensPerS(l), fmt.Sprintf("%d/%d", l.TTFTMissed, l.TPOTMissed)})
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(app.Out)
	header := []string{"load", "class", "ttft p50/p90/p99 ms", "tpot p50/p90/p99 ms", "e2e p50/p90/p99 ms", "mean ttft/tpot/e2e ms", "out tok/s", "missed ttft/tpot"}
	app.Table(header, rows)
	noSample := "no request of the class answered with that time at that load"
	tables.DashNote(app.Out, header, rows, map[string]string{"ttft p50/p90/p99 ms": noSample, "tpot p50/p90/p99 ms": noSample,
		"e2e p50/p90/p99 ms": noSample, "mean ttft/tpot/e2e ms": noSample, "out tok/s": "no output token known (the server drew the lengths)"})
	if unstamped {
		fmt.Fprintln(app.Out, "note: the policy stamped no first token for some answered requests: they have no TTFT or TPOT sample (see the report's llm.unstamped)")
	}
	// The engines' settings do not change with the load: one line, one entry per distinct
	// engine setting (two instances of one model and GPU give the same entries); the
	// counters that do change, a line per load.
	var settings []string
	for _, p := range points {
		if e := p.LLMEngine; e != nil {
			for _, s := range e.Settings {
				if !slices.Contains(settings, s) {
					settings = append(settings, s)
				}
			}
		}
	}
	engines := false
	for _, p := range points {
		if e := p.LLMEngine; e != nil {
			if !engines {
				engines = true
				line := "vLLM defaults"
				if len(settings) > 0 {
					line = strings.Join(settings, ", ")
				}
				fmt.Fprintf(app.Out, "engine settings: %s\n", line)
			}
			apc := ""
			if e.PrefixCacheQueries > 0 { // prefix caching on: hit rate and cached tokens (llm-engine-2 §2)
				apc = fmt.Sprintf(", prefix cache hit rate %.1f%% (%d of %d prompt tokens cached)", 100*e.PrefixCacheHitRate, e.PrefixCacheHits, e.PrefixCacheQueries)
			}
			if e.KVOffloadQueries > 0 { // the CPU tier's hits among the GPU's misses
				apc += fmt.Sprintf(", CPU offload hit rate %.1f%% (%d of %d missed tokens loaded back)", 100*e.KVOffloadHitRate, e.KVOffloadHits, e.KVOffloadQueries)
			}
			fmt.Fprintf(app.Out, "engine at load %.2f: policy %s, %d preemptions (%d requests)%s\n", p.Load, e.Policy, e.Preemptions, e.PreemptedRequests, apc)
		}
	}
}
