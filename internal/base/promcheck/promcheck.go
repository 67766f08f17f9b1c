// Package promcheck checks a Prometheus text exposition the way `promtool check metrics` does
// (ecosystem digest §7: base units, counters ending in _total, help text, the exposition
// checked by promtool), so every system's /metrics is held to it in every test run, whether
// or not promtool is installed.
//
// Lint parses the text with the Prometheus library's strict text parser (a malformed line, a
// family declared twice or split in two, is an error as it is for a scraper) and applies
// promlint, the linter promtool itself runs (client_golang's testutil/promlint: help text,
// counters' _total, base units _seconds/_bytes instead of _milliseconds/_kilobytes and the
// like, no abbreviated units, snake_case names, no _count/_sum/_bucket outside histograms and
// summaries, no type in the name, no duplicate series within a family), plus one rule
// promlint's per-family pass cannot see: a series (name and labels) exposed twice anywhere.
// Promtool runs the real tool when it is on PATH.
//
// Drop-in names: the vLLM (vllm:*) and Triton (nv_inference_*) families keep the names their
// consumers query (ecosystem drop-in §1, §2: dashboards, autoscalers, endpoint pickers), which
// break promtool's naming rules (a ':' in a gauge's name, Triton's counters without _total
// and in microseconds, vLLM's iteration_tokens_total histogram). Those naming problems, and
// only those, are waived for those families (DropInWaived); everything else (help text,
// parsing, duplicates) holds for them too.
package promcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Lint returns the problems of a text exposition, one line each ("name: problem"), sorted;
// none means promtool's lint would pass it. An exposition that does not parse is an error.
func Lint(text []byte) ([]string, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := p.TextToMetricFamilies(bytes.NewReader(text)); err != nil {
		return nil, fmt.Errorf("the exposition does not parse: %w", err)
	}
	var fams []*dto.MetricFamily
	dec := expfmt.NewDecoder(bytes.NewReader(text), expfmt.NewFormat(expfmt.TypeTextPlain))
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("the exposition does not parse: %w", err)
		}
		fams = append(fams, mf)
	}
	probs, err := promlint.NewWithMetricFamilies(fams).Lint()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, pr := range probs {
		if DropInWaived(pr.Metric, pr.Text) {
			continue
		}
		out = append(out, pr.Metric+": "+pr.Text)
	}
	out = append(out, duplicateSeries(fams)...)
	sort.Strings(out)
	return out, nil
}

// dropInPrefixes are the families whose names are fixed by other projects' consumers.
var dropInPrefixes = []string{"vllm:", "nv_inference_"}

// namingRules are the promlint problems about a name's shape (not its help or its series).
var namingRules = []string{
	"metric names should not contain ':'",
	`counter metrics should have "_total" suffix`,
	"metric names should not contain abbreviated units",
	`non-histogram and non-summary metrics should not have "_count" suffix`,
	`non-counter metrics should not have "_total" suffix`,
}

// DropInWaived reports whether problem, found in family metric, is a naming rule waived for a
// drop-in family (the package comment).
func DropInWaived(metric, problem string) bool {
	drop := false
	for _, p := range dropInPrefixes {
		drop = drop || strings.HasPrefix(metric, p)
	}
	if !drop {
		return false
	}
	for _, r := range namingRules {
		if strings.TrimSpace(problem) == r {
			return true
		}
	}
	return false
}

// duplicateSeries reports every series (family name and label set) exposed more than once.
func duplicateSeries(fams []*dto.MetricFamily) []string {
	seen := map[string]int{}
	var order []string
	for _, mf := range fams {
		for _, m := range mf.GetMetric() {
			ls := make([]string, 0, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			k := mf.GetName() + "{" + strings.Join(ls, ",") + "}"
			if seen[k]++; seen[k] == 2 {
				order = append(order, k)
			}
		}
	}
	out := make([]string, len(order))
	for i, k := range order {
		out[i] = fmt.Sprintf("%s: series exposed %d times", k, seen[k])
	}
	return out
}

// ErrNoPromtool is Promtool's error when promtool is not on PATH (Debian: apt-get install
// prometheus).
var ErrNoPromtool = errors.New("promtool not found on PATH (Debian: apt-get install prometheus)")

// Promtool runs `promtool check metrics` on text: nil when it passes, ErrNoPromtool when the
// tool is missing, else an error with its output.
func Promtool(ctx context.Context, text []byte) error {
	path, err := exec.LookPath("promtool")
	if err != nil {
		return ErrNoPromtool
	}
	cmd := exec.CommandContext(ctx, path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err == nil {
		return nil
	}
	// Exit status 3 is lint problems, one "name problem" line each (on stdout or stderr,
	// by version): pass when every one is a waived drop-in naming rule.
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		var left []string
		for _, line := range strings.Split(stdout.String()+stderr.String(), "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			name, problem, _ := strings.Cut(line, " ")
			if !DropInWaived(name, problem) {
				left = append(left, line)
			}
		}
		if len(left) == 0 {
			return nil
		}
	}
	return fmt.Errorf("promtool check metrics: %v\n%s%s", err, stdout.Bytes(), stderr.Bytes())
}

// TB is the part of testing.TB RequirePromtool needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// RequirePromtool skips t when promtool is not on PATH, or fails it under PLAN_REQUIRE_ALL=1
// (CI, which installs it).
func RequirePromtool(t TB) {
	t.Helper()
	if _, err := exec.LookPath("promtool"); err == nil {
		return
	}
	if os.Getenv("PLAN_REQUIRE_ALL") == "1" {
		t.Fatalf("%v (PLAN_REQUIRE_ALL=1)", ErrNoPromtool)
	}
	t.Skipf("%v", ErrNoPromtool)
}
