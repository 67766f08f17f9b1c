package schedule

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestWindows: each window's peak is the quantile (nearest rank) of its one-minute rates ×
// the margin; a span not a multiple of the window leaves a shorter last window.
func TestWindows(t *testing.T) {
	r, err := ReadRatesFile("testdata/toy.csv")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		window float64
		p      Peaks
		want   []Window
	}{
		{name: "2m p99 ×1.1", window: 120, p: DefaultPeaks, want: []Window{
			{0, 120, []float64{66, 132}}, {120, 240, []float64{110, 220}}, {240, 360, []float64{27.5, 49.5}}}},
		{name: "2m median ×1", window: 120, p: Peaks{Quantile: 0.5, Margin: 1, Bucket: 60}, want: []Window{
			{0, 120, []float64{50, 100}}, {120, 240, []float64{80, 150}}, {240, 360, []float64{20, 40}}}},
		{name: "4m, shorter last", window: 240, p: Peaks{Quantile: 1, Margin: 1, Bucket: 60}, want: []Window{
			{0, 240, []float64{100, 200}}, {240, 360, []float64{25, 45}}}},
		{name: "2-minute buckets", window: 360, p: Peaks{Quantile: 1, Margin: 1, Bucket: 120}, want: []Window{
			{0, 360, []float64{90, 175}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Windows(tc.window, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWindowsBad: a window longer than the trace, not positive, shorter than or not a
// multiple of its interval, and a quantile or margin out of range are errors naming the flag
// and the value.
func TestWindowsBad(t *testing.T) {
	r, err := ReadRatesFile("testdata/toy.csv")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		window float64
		p      Peaks
		want   string
	}{
		{"longer", 361, DefaultPeaks, "--window 6m1s: longer than the trace testdata/toy.csv (6m0s long)"},
		{"zero", 0, DefaultPeaks, "--window 0s: must be > 0"},
		{"shorter than a row", 30, DefaultPeaks, "--window 30s: shorter than the trace testdata/toy.csv's interval (1m0s)"},
		{"not a multiple", 90, DefaultPeaks, "--window 1m30s: must be a multiple"},
		{"quantile", 60, Peaks{Quantile: 0, Margin: 1, Bucket: 60}, "--peak-quantile 0"},
		{"margin", 60, Peaks{Quantile: 1, Margin: 0.9, Bucket: 60}, "--margin 0.9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Windows(tc.window, tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestParseRatesBad: every malformed trace is an error naming the file, the line and value.
func TestParseRatesBad(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"empty", "", "empty"},
		{"header", "t,m0\n0,1\n60,1\n", "header"},
		{"one row", "time_s,m0\n0,1\n", "at least 2"},
		{"nan", "time_s,m0\n0,1\n60,NaN\n", `line 3: m0 "NaN"`},
		{"decreasing", "time_s,m0\n60,1\n0,1\n", "line 3: time_s 0: must increase"},
		{"uneven", "time_s,m0\n0,1\n60,1\n90,1\n", "line 4: time_s 90: rows must be 60s apart"},
		{"repeated column", "time_s,m0,m0\n0,1,1\n60,1,1\n", `column "m0"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRates("day.csv", strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "day.csv: ") {
				t.Errorf("error %v, want day.csv: …%s…", err, tc.want)
			}
		})
	}
}

// TestDiurnalRoundTrip: the bench's day series has its trough and top where documented, and
// reads back from its CSV unchanged.
func TestDiurnalRoundTrip(t *testing.T) {
	d := Diurnal{Targets: []string{"a", "b"}, Top: []float64{100, 10}, Trough: 0.25, Bursts: AzureConvBursts, Offsets: []int{0, 29}}
	r := d.Rates("day.csv")
	if len(r.Rates) != 1440 {
		t.Fatalf("%d rows, want 1440", len(r.Rates))
	}
	flat := Diurnal{Targets: []string{"a"}, Top: []float64{100}, Trough: 0.25}.Rates("flat")
	for _, c := range []struct {
		minute int
		want   float64
	}{{4 * 60, 25}, {16 * 60, 100}, {10 * 60, 62.5}} {
		if got := flat.Rates[c.minute][0]; math.Abs(got-c.want) > 1e-6 {
			t.Errorf("minute %d: %v, want %v", c.minute, got, c.want)
		}
	}
	var b strings.Builder
	if err := r.WriteCSV(&b, "a comment"); err != nil {
		t.Fatal(err)
	}
	back, err := ParseRates("day.csv", strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Error("the CSV does not read back to the same series")
	}
}

var update = flag.Bool("update", false, "rewrite testdata/schedule/day.csv")

// dayComment heads testdata/schedule/day.csv: what it is and whose bursts it carries.
const dayComment = "the day series of BenchmarkDaySchedule's ppipe case (schedule.Diurnal: m0, m1 at 80, 160 req/s at the top, trough 25% at 04:00) with the minute bursts of the Azure Public Dataset's Azure LLM inference trace 2023 (CC-BY 4.0; Patel et al., Splitwise, ISCA 2024); -update rewrites it"

// TestDayFixture: the repository's example day trace is the bench's series (-update rewrites it).
func TestDayFixture(t *testing.T) {
	d := Diurnal{Targets: []string{"m0", "m1"}, Top: []float64{80, 160}, Trough: 0.25, Bursts: AzureConvBursts, Offsets: []int{0, 29}}
	var b strings.Builder
	if err := d.Rates("day.csv").WriteCSV(&b, dayComment); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "testdata", "schedule", "day.csv")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != b.String() {
		t.Errorf("%s differs from the bench's day series (go test ./planner/schedule -run DayFixture -update)", path)
	}
}
