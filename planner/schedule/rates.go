// Package schedule plans a day window by window: a rate trace (request rates
// per model over time) is cut into windows, each window is planned for its own peak at the
// least cost (`plan solve --objective cost`), and the day's cost of the schedule is compared
// with provisioning the whole day for its peak. Mélange (Griggs et al., 2024) prices one load
// point; a diurnal load (the Azure and Twitter traces swing several-fold over a day) pays for
// its peak all day unless the fleet follows it, which this package does at the granularity of
// a window, leaving minute-scale bursts to the margin above each window's peak.
package schedule

import (
	"bufio"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
)

// Rates is a rate trace: Rates[t][i] requests/s of Targets[i] over [Start+i·Step, +Step).
type Rates struct {
	// Name is the file the trace came from (messages).
	Name    string
	Targets []string
	Start   float64 // seconds
	Step    float64 // seconds
	Rates   [][]float64
}

// Span is the trace's length in seconds.
func (r *Rates) Span() float64 { return r.Step * float64(len(r.Rates)) }

// Column returns the index of target, or -1.
func (r *Rates) Column(target string) int {
	for i, t := range r.Targets {
		if t == target {
			return i
		}
	}
	return -1
}

// ReadRatesFile reads a rate trace CSV (ParseRates).
func ReadRatesFile(path string) (*Rates, error) {
	// formats.Open: a regular file only (no FIFO, device or link out of its directory),
	// .gz/.zst decompressed, at most MaxFileBytes of content.
	f, err := formats.Open(path, formats.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseRates(path, bufio.NewReader(f))
}

// TraceDigestOf is the digest a schedule records of its trace (Schedule.TraceDigest): sha256
// of the file's content, streamed through the same checked reader as ReadRatesFile.
func TraceDigestOf(path string) (string, error) {
	f, err := formats.Open(path, formats.MaxFileBytes)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// ParseRates reads a rate trace: a CSV whose header is `time_s` then one column per model
// (or LLM class, pipeline, workflow app) of the workload, and whose rows give, from each row's
// time (seconds, increasing by one fixed step), the rate in requests/s of every column until
// the next row. Lines starting with # are comments. Every problem names the file, the line,
// the column and the value.
func ParseRates(name string, rd io.Reader) (*Rates, error) {
	cr := csv.NewReader(rd)
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty: want a header `time_s,MODEL,...` and one row per interval", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(head) < 2 || strings.TrimSpace(head[0]) != "time_s" {
		return nil, fmt.Errorf("%s: line 1: header %q: want `time_s` then one column per model", name, strings.Join(head, ","))
	}
	r := &Rates{Name: name}
	seen := map[string]bool{}
	for _, h := range head[1:] {
		h = strings.TrimSpace(h)
		if h == "" || seen[h] {
			return nil, fmt.Errorf("%s: line 1: column %q: empty or repeated", name, h)
		}
		seen[h] = true
		r.Targets = append(r.Targets, h)
	}
	var times []float64
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		t, err := strconv.ParseFloat(strings.TrimSpace(rec[0]), 64)
		if err != nil || t < 0 || math.IsInf(t, 0) || math.IsNaN(t) {
			return nil, fmt.Errorf("%s: line %d: time_s %q: must be a finite number of seconds ≥ 0", name, line, rec[0])
		}
		row := make([]float64, len(r.Targets))
		for i, s := range rec[1:] {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, fmt.Errorf("%s: line %d: %s %q: must be a finite rate ≥ 0 (requests/s)", name, line, r.Targets[i], s)
			}
			row[i] = v
		}
		if n := len(times); n > 0 {
			step := t - times[n-1]
			if step <= 0 {
				return nil, fmt.Errorf("%s: line %d: time_s %v: must increase (previous row %v)", name, line, t, times[n-1])
			}
			if n == 1 {
				r.Step = step
			} else if math.Abs(step-r.Step) > stepTol*r.Step {
				return nil, fmt.Errorf("%s: line %d: time_s %v: rows must be %vs apart (the first step), this one is %vs", name, line, t, r.Step, step)
			}
		}
		times = append(times, t)
		r.Rates = append(r.Rates, row)
	}
	if len(times) < 2 {
		return nil, fmt.Errorf("%s: %d rows: want at least 2 (the step between rows is the interval)", name, len(times))
	}
	r.Start = times[0]
	return r, nil
}

// Peaks are the rates a window must be planned for.
type Peaks struct {
	// Quantile of the window's bucket rates (0.99: the p99 minute; 1: the highest).
	Quantile float64
	// Margin multiplies the quantile (1.1: 10% above), for the bursts inside a bucket.
	Margin float64
	// Bucket is the averaging interval in seconds (60: one-minute rates; never below Step).
	Bucket float64
}

// DefaultPeaks: the p99 of one-minute rates × 1.1 (the brief's margin; minute rates because
// a plan's queues absorb sub-minute bursts within their SLO slack, PPipe §7.3's bursty runs).
var DefaultPeaks = Peaks{Quantile: 0.99, Margin: 1.1, Bucket: 60}

// Window is one window of the trace and the rate per target it is planned for.
type Window struct {
	Start, End float64 // seconds
	Peak       []float64
}

// Windows cuts the trace into windows of w seconds from its start (the last one shorter when
// the span is not a multiple) and gives each its peak per target: the Quantile (nearest rank)
// of the bucket-mean rates of the buckets starting in it, × Margin.
func (r *Rates) Windows(w float64, p Peaks) ([]Window, error) {
	span := r.Span()
	switch {
	case !(w > 0):
		return nil, fmt.Errorf("--window %vs: must be > 0", w)
	case w > span*(1+relTol):
		return nil, fmt.Errorf("--window %s: longer than the trace %s (%s long)", fmtSec(w), r.Name, fmtSec(span))
	case w < r.Step*(1-relTol):
		return nil, fmt.Errorf("--window %s: shorter than the trace %s's interval (%s)", fmtSec(w), r.Name, fmtSec(r.Step))
	case math.Abs(w/r.Step-math.Round(w/r.Step)) > stepTol:
		return nil, fmt.Errorf("--window %s: must be a multiple of the trace %s's interval (%s)", fmtSec(w), r.Name, fmtSec(r.Step))
	case !(p.Quantile > 0 && p.Quantile <= 1):
		return nil, fmt.Errorf("--peak-quantile %v: must be in (0, 1]", p.Quantile)
	case !(p.Margin >= 1) || math.IsInf(p.Margin, 0):
		return nil, fmt.Errorf("--margin %v: must be a finite number ≥ 1", p.Margin)
	}
	per := r.bucketRows(p)
	var out []Window
	for s := 0.0; s < span-absTol; s += w {
		e := math.Min(s+w, span)
		var buckets [][]float64
		lo, hi := int(math.Round(s/r.Step)), int(math.Round(e/r.Step))
		for b := lo; b < hi; b += per {
			end := min(b+per, hi)
			mean := make([]float64, len(r.Targets))
			for _, row := range r.Rates[b:end] {
				for i, v := range row {
					mean[i] += v / float64(end-b)
				}
			}
			buckets = append(buckets, mean)
		}
		pk := make([]float64, len(r.Targets))
		for i := range pk {
			vs := make([]float64, len(buckets))
			for j, b := range buckets {
				vs[j] = b[i]
			}
			sort.Float64s(vs)
			k := max(0, int(math.Ceil(p.Quantile*float64(len(vs))))-1)
			pk[i] = round6(vs[k] * p.Margin)
		}
		out = append(out, Window{Start: r.Start + s, End: r.Start + e, Peak: pk})
	}
	return out, nil
}

// bucketRows is how many rows one bucket averages: Bucket's worth, at least one.
func (r *Rates) bucketRows(p Peaks) int { return max(1, int(math.Round(p.Bucket/r.Step))) }

// BucketS is the averaging interval in seconds the peaks use on this trace.
func (r *Rates) BucketS(p Peaks) float64 { return float64(r.bucketRows(p)) * r.Step }

// MeanRates are the mean rates per target over [from, to) seconds (trace time).
func (r *Rates) MeanRates(from, to float64) []float64 {
	out := make([]float64, len(r.Targets))
	lo, hi := int(math.Round((from-r.Start)/r.Step)), int(math.Round((to-r.Start)/r.Step))
	lo, hi = max(lo, 0), min(hi, len(r.Rates))
	for _, row := range r.Rates[lo:hi] {
		for i, v := range row {
			out[i] += v / float64(max(1, hi-lo))
		}
	}
	return out
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

func fmtSec(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}
