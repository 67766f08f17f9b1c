package schedule

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// AzureConvBursts are the minute-scale bursts of a real LLM service: the per-minute request
// counts of the Azure LLM inference trace 2023, conversation service (58 whole minutes,
// 2023-11-16 18:15–19:13, 19,365 requests), each divided by their mean (333.3/min): between
// 0.57 and 1.52 of the hour's mean.
//
// Source: Azure Public Dataset, "Azure LLM inference trace 2023", CC-BY 4.0; cite Patel et
// al., "Splitwise: Efficient Generative LLM Inference Using Phase Splitting", ISCA 2024.
// See NOTICE in this directory.
var AzureConvBursts = []float64{
	0.573, 0.795, 0.987, 1.059, 0.921, 0.819, 0.804, 0.783, 0.966, 0.894, 0.903, 0.906, 1.035, 0.978, 0.849,
	0.837, 0.840, 0.924, 1.029, 1.053, 1.053, 1.029, 1.224, 1.188, 1.158, 1.194, 1.296, 1.440, 1.428, 1.359,
	1.344, 1.521, 1.314, 1.239, 1.269, 1.254, 1.395, 0.933, 0.987, 0.948, 0.999, 1.065, 0.957, 1.080, 1.002,
	1.125, 0.990, 0.747, 0.663, 0.747, 0.795, 0.840, 0.768, 0.762, 0.726, 0.780, 0.738, 0.675,
}

// Diurnal is the day-long rate series of the schedule bench (BenchmarkDaySchedule): a
// sinusoid with its trough (Trough × the top, at 04:00) and its top (at 16:00), times the
// Bursts laid minute by minute over it (target i starts Offsets[i] minutes into them, so
// models do not burst in lockstep). Rates are per minute (Step 60 s) over Days days.
type Diurnal struct {
	Targets []string
	// Top is each target's rate at the sinusoid's top, before bursts (requests/s).
	Top     []float64
	Trough  float64 // 0.25: the night is a quarter of the afternoon
	Bursts  []float64
	Offsets []int
	Days    int
}

// Rates builds the series.
func (d Diurnal) Rates(name string) *Rates {
	days := max(d.Days, 1)
	n := days * 24 * 60
	r := &Rates{Name: name, Targets: d.Targets, Step: 60, Rates: make([][]float64, n)}
	for m := range n {
		// 1 at 16:00, Trough at 04:00.
		phase := 2 * math.Pi * float64(m-16*60) / (24 * 60)
		shape := d.Trough + (1-d.Trough)*(1+math.Cos(phase))/2
		row := make([]float64, len(d.Targets))
		for i := range d.Targets {
			b := 1.0
			if len(d.Bursts) > 0 {
				off := 0
				if i < len(d.Offsets) {
					off = d.Offsets[i]
				}
				b = d.Bursts[(m+off)%len(d.Bursts)]
			}
			row[i] = round6(d.Top[i] * shape * b)
		}
		r.Rates[m] = row
	}
	return r
}

// WriteCSV writes the trace in the format ParseRates reads, with comment lines first.
func (r *Rates) WriteCSV(w io.Writer, comments ...string) error {
	var b strings.Builder
	for _, c := range comments {
		fmt.Fprintf(&b, "# %s\n", c)
	}
	b.WriteString("time_s," + strings.Join(r.Targets, ",") + "\n")
	for i, row := range r.Rates {
		b.WriteString(strconv.FormatFloat(r.Start+float64(i)*r.Step, 'f', -1, 64))
		for _, v := range row {
			b.WriteString("," + strconv.FormatFloat(v, 'f', -1, 64))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
