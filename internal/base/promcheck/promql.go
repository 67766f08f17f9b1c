package promcheck

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// NonEmpty evaluates every expression with Prometheus's own PromQL engine (`promtool test
// rules`: importing the Prometheus module would add minutes of compile time to every CI run)
// over a series of scrapes of one target, taken one minute apart as far as the engine is
// told, with labels (job, instance: what a scrape adds) on every series. It reports, for
// each expression that returns no series or only NaN at the last scrape, an error naming it;
// nil when all return data. Each expression is checked as
// clamp_max(count((e) == (e)), 1) == 1: the comparison drops NaN samples (a quantile of
// buckets that did not move), count an empty result.
func NonEmpty(ctx context.Context, scrapes [][]byte, labels map[string]string, exprs []string) error {
	path, err := exec.LookPath("promtool")
	if err != nil {
		return ErrNoPromtool
	}
	series, err := seriesOf(scrapes, labels)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("rule_files: []\nevaluation_interval: 1m\ntests:\n- interval: 1m\n  input_series:\n")
	keys := make([]string, 0, len(series))
	for k := range series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  - series: %s\n    values: '%s'\n", yamlQuote(k), strings.Join(series[k], " "))
	}
	b.WriteString("  promql_expr_test:\n")
	at := fmt.Sprintf("%dm", len(scrapes)-1)
	for _, e := range exprs {
		fmt.Fprintf(&b, "  - expr: %s\n    eval_time: %s\n    exp_samples:\n    - labels: '{}'\n      value: 1\n",
			yamlQuote(wrap(e)), at)
	}
	dir, err := os.MkdirTemp("", "promql")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "test.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, path, "test", "rules", file).CombinedOutput()
	if err == nil {
		return nil
	}
	// Name the expressions that failed, as given (promtool quotes the wrapped form).
	var failed []string
	for _, line := range strings.Split(string(out), "\n") {
		q, ok := strings.CutPrefix(strings.TrimSpace(line), "expr: ")
		if !ok {
			continue
		}
		if i := strings.LastIndex(q, ", time:"); i >= 0 {
			q = q[:i]
		}
		w, uerr := strconv.Unquote(q)
		if uerr != nil {
			continue
		}
		for _, e := range exprs {
			if w == wrap(e) {
				failed = append(failed, e)
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d expressions return no series (or only NaN):\n  %s", len(failed), len(exprs), strings.Join(failed, "\n  "))
	}
	return fmt.Errorf("promtool test rules: %v\n%s", err, out)
}

// wrap is the check of expression e: 1 when it returns a non-NaN sample, else nothing.
func wrap(e string) string { return fmt.Sprintf("clamp_max(count((%s) == (%s)), 1)", e, e) }

// seriesOf turns scrapes into promtool input series: one per sample name and label set
// (histograms as _bucket, _sum and _count; summaries as quantiles, _sum, _count), values in
// scrape order, "_" where a scrape lacks the series.
func seriesOf(scrapes [][]byte, extra map[string]string) (map[string][]string, error) {
	out := map[string][]string{}
	for i, text := range scrapes {
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
		if err != nil {
			return nil, fmt.Errorf("scrape %d does not parse: %w", i, err)
		}
		add := func(name string, ls []*dto.LabelPair, more map[string]string, v float64) {
			m := map[string]string{}
			for k, v := range extra {
				m[k] = v
			}
			for _, l := range ls {
				m[l.GetName()] = l.GetValue()
			}
			for k, v := range more {
				m[k] = v
			}
			k := seriesKey(name, m)
			vals := out[k]
			for len(vals) < i {
				vals = append(vals, "_")
			}
			out[k] = append(vals, formatValue(v))
		}
		for name, mf := range fams {
			for _, m := range mf.GetMetric() {
				ls := m.GetLabel()
				switch mf.GetType() {
				case dto.MetricType_COUNTER:
					add(name, ls, nil, m.GetCounter().GetValue())
				case dto.MetricType_GAUGE:
					add(name, ls, nil, m.GetGauge().GetValue())
				case dto.MetricType_UNTYPED:
					add(name, ls, nil, m.GetUntyped().GetValue())
				case dto.MetricType_HISTOGRAM:
					h := m.GetHistogram()
					inf := false
					for _, bk := range h.GetBucket() {
						le := formatValue(bk.GetUpperBound())
						inf = inf || math.IsInf(bk.GetUpperBound(), 1)
						add(name+"_bucket", ls, map[string]string{"le": le}, float64(bk.GetCumulativeCount()))
					}
					if !inf {
						add(name+"_bucket", ls, map[string]string{"le": "+Inf"}, float64(h.GetSampleCount()))
					}
					add(name+"_sum", ls, nil, h.GetSampleSum())
					add(name+"_count", ls, nil, float64(h.GetSampleCount()))
				case dto.MetricType_SUMMARY:
					s := m.GetSummary()
					for _, q := range s.GetQuantile() {
						add(name, ls, map[string]string{"quantile": formatValue(q.GetQuantile())}, q.GetValue())
					}
					add(name+"_sum", ls, nil, s.GetSampleSum())
					add(name+"_count", ls, nil, float64(s.GetSampleCount()))
				}
			}
		}
	}
	for k, vals := range out {
		for len(vals) < len(scrapes) {
			vals = append(vals, "_")
		}
		out[k] = vals
	}
	return out, nil
}

// seriesKey is a series in PromQL's notation: name{labels} (exposition names, ':' included,
// are valid PromQL names).
func seriesKey(name string, ls map[string]string) string {
	keys := make([]string, 0, len(ls))
	for k := range ls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+strconv.Quote(ls[k]))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// yamlQuote is s as a YAML single-quoted scalar.
func yamlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
