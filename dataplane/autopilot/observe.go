package autopilot

import (
	"fmt"

	"github.com/plan-dev/plan/dataplane"
)

// Sample is one application's traffic over one closed window.
type Sample struct {
	// Rate is the arrival rate in requests/s.
	Rate float64 `json:"rate_rps"`
	// Peak is the highest rate over one of the window's Subwindows slices: what the plan
	// must serve within its SLO (a 14 ms SLO leaves no queue to absorb a one-second burst
	// that a ten-second mean hides).
	Peak float64 `json:"peak_rps"`
	// Tokens is the mean token count per request (input + output for LLM classes; 0 where
	// requests carry none).
	Tokens float64 `json:"tokens,omitempty"`
}

// Subwindows is how many slices of a window its Peak is measured over.
const Subwindows = 10

type bucket struct {
	n      int64
	tokens int64
	subs   [Subwindows]int64
}

// Observer counts admitted requests per application in fixed windows and keeps the last
// History closed windows: a sliding window of rates and token mixes, from which the
// application mix (PARD's and DyOrc's share of each application) follows.
type Observer struct {
	window  dataplane.Time
	start   dataplane.Time
	cur     []bucket
	history [][]Sample // oldest first, at most keep
	keep    int
}

// NewObserver observes apps applications in windows of the given width, keeping keep
// closed windows, starting at start.
func NewObserver(apps int, window dataplane.Time, keep int, start dataplane.Time) (*Observer, error) {
	if apps <= 0 || window <= 0 || keep <= 0 {
		return nil, fmt.Errorf("autopilot: observer of %d applications, window %d µs, history %d: want all > 0", apps, window, keep)
	}
	return &Observer{window: window, start: start, cur: make([]bucket, apps), keep: keep}, nil
}

// Admit counts one admitted request of app arriving at at with tokens tokens (0: none). A
// request of an unknown application is ignored (the server refuses those anyway).
func (o *Observer) Admit(at dataplane.Time, app int, tokens int64) {
	if app < 0 || app >= len(o.cur) {
		return
	}
	// A late admission of a closed window counts in the current one: the observer never
	// rewrites history the forecasters have seen.
	i := 0
	if at > o.start {
		i = min(int((at-o.start)*Subwindows/o.window), Subwindows-1)
	}
	b := &o.cur[app]
	b.n++
	b.tokens += tokens
	b.subs[i]++
}

// Roll closes every window that ended by now and returns the closed windows, oldest first
// (none when the current window is still open). An idle window closes with rate 0.
func (o *Observer) Roll(now dataplane.Time) [][]Sample {
	var out [][]Sample
	for now >= o.start+o.window {
		secs := float64(o.window) / 1e6
		w := make([]Sample, len(o.cur))
		for a, b := range o.cur {
			w[a].Rate = float64(b.n) / secs
			for _, n := range b.subs {
				w[a].Peak = max(w[a].Peak, float64(n)*Subwindows/secs)
			}
			if b.n > 0 {
				w[a].Tokens = float64(b.tokens) / float64(b.n)
			}
		}
		clear(o.cur)
		o.start += o.window
		o.history = append(o.history, w)
		if len(o.history) > o.keep {
			o.history = o.history[len(o.history)-o.keep:]
		}
		out = append(out, w)
	}
	return out
}

// History returns the closed windows kept, oldest first (shared; do not modify).
func (o *Observer) History() [][]Sample { return o.history }

// Mix returns each application's share of the arrivals over the kept windows (all zero
// when nothing arrived).
func (o *Observer) Mix() []float64 {
	mix := make([]float64, len(o.cur))
	var total float64
	for _, w := range o.history {
		for a, s := range w {
			mix[a] += s.Rate
			total += s.Rate
		}
	}
	if total > 0 {
		for a := range mix {
			mix[a] /= total
		}
	}
	return mix
}

// WindowStart returns the start of the open window.
func (o *Observer) WindowStart() dataplane.Time { return o.start }
