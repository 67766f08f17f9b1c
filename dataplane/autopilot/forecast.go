package autopilot

import (
	"fmt"
	"math"
)

// Forecaster predicts a series one observation (window) at a time.
type Forecaster interface {
	// Update feeds the next observation.
	Update(x float64)
	// Forecast returns the prediction h ≥ 1 windows ahead of the last observation (never
	// negative; 0 before any observation).
	Forecast(h int) float64
	// Name names the method for /v1/autopilot and reports.
	Name() string
}

// Default smoothing constants: the level follows a 2–3-window change (α), the trend is
// damped more (β), the season more still (γ). Hyndman & Athanasopoulos, "Forecasting:
// principles and practice" §8.2 (Holt's linear trend) and §8.3 (Holt-Winters' additive).
const (
	DefaultAlpha = 0.5
	DefaultBeta  = 0.2
	DefaultGamma = 0.3
)

// Holt is Holt's linear trend method (EWMA with trend), the documented default:
// ℓₜ = αxₜ + (1−α)(ℓₜ₋₁+bₜ₋₁), bₜ = β(ℓₜ−ℓₜ₋₁) + (1−β)bₜ₋₁, x̂ₜ₊ₕ = ℓₜ + h·bₜ.
type Holt struct {
	Alpha, Beta  float64
	level, trend float64
	n            int
}

// NewHolt returns Holt's method with the given constants (0: the defaults).
func NewHolt(alpha, beta float64) *Holt {
	if alpha <= 0 {
		alpha = DefaultAlpha
	}
	if beta <= 0 {
		beta = DefaultBeta
	}
	return &Holt{Alpha: alpha, Beta: beta}
}

// Name implements Forecaster.
func (h *Holt) Name() string { return "holt" }

// Update implements Forecaster.
func (h *Holt) Update(x float64) {
	switch h.n {
	case 0:
		h.level = x
	case 1:
		h.trend = x - h.level
		h.level = x
	default:
		prev := h.level
		h.level = h.Alpha*x + (1-h.Alpha)*(h.level+h.trend)
		h.trend = h.Beta*(h.level-prev) + (1-h.Beta)*h.trend
	}
	h.n++
}

// Forecast implements Forecaster.
func (h *Holt) Forecast(k int) float64 {
	return math.Max(0, h.level+float64(k)*h.trend)
}

// HoltWinters is Holt-Winters' additive method with a season of Period windows: the first
// Period observations initialise the level (their mean) and the seasonal offsets; then
// ℓₜ = α(xₜ−sₜ₋ₘ) + (1−α)(ℓₜ₋₁+bₜ₋₁), bₜ = β(ℓₜ−ℓₜ₋₁) + (1−β)bₜ₋₁,
// sₜ = γ(xₜ−ℓₜ₋₁−bₜ₋₁) + (1−γ)sₜ₋ₘ, x̂ₜ₊ₕ = ℓₜ + h·bₜ + sₜ₊ₕ₋ₘ.
type HoltWinters struct {
	Alpha, Beta, Gamma float64
	Period             int
	level, trend       float64
	season             []float64
	warm               []float64
	n                  int
}

// NewHoltWinters returns Holt-Winters' additive method with a season of period ≥ 2 windows
// (constants 0: the defaults).
func NewHoltWinters(period int, alpha, beta, gamma float64) (*HoltWinters, error) {
	if period < 2 {
		return nil, fmt.Errorf("autopilot: Holt-Winters period %d windows: want ≥ 2", period)
	}
	if alpha <= 0 {
		alpha = DefaultAlpha
	}
	if beta <= 0 {
		beta = DefaultBeta
	}
	if gamma <= 0 {
		gamma = DefaultGamma
	}
	return &HoltWinters{Alpha: alpha, Beta: beta, Gamma: gamma, Period: period, season: make([]float64, period)}, nil
}

// Name implements Forecaster.
func (h *HoltWinters) Name() string { return fmt.Sprintf("holt-winters(%d)", h.Period) }

// Update implements Forecaster.
func (h *HoltWinters) Update(x float64) {
	if h.n < h.Period {
		h.warm = append(h.warm, x)
		h.n++
		if h.n == h.Period {
			var sum float64
			for _, v := range h.warm {
				sum += v
			}
			h.level = sum / float64(h.Period)
			for i, v := range h.warm {
				h.season[i] = v - h.level
			}
			h.warm = nil
		}
		return
	}
	i := h.n % h.Period
	prev := h.level
	h.level = h.Alpha*(x-h.season[i]) + (1-h.Alpha)*(h.level+h.trend)
	h.trend = h.Beta*(h.level-prev) + (1-h.Beta)*h.trend
	h.season[i] = h.Gamma*(x-prev-h.trend) + (1-h.Gamma)*h.season[i]
	h.n++
}

// Forecast implements Forecaster.
func (h *HoltWinters) Forecast(k int) float64 {
	if h.n < h.Period {
		// Warming up: the mean so far, seasonless.
		if len(h.warm) == 0 {
			return 0
		}
		var sum float64
		for _, v := range h.warm {
			sum += v
		}
		return sum / float64(len(h.warm))
	}
	return math.Max(0, h.level+float64(k)*h.trend+h.season[(h.n+k-1)%h.Period])
}

// Tracked wraps a Forecaster and tracks its one-step error online: before each update it
// compares the forecast made one window earlier with what arrived.
type Tracked struct {
	Forecaster
	n       int
	sumAPE  float64
	sumAE   float64
	lastAPE float64
}

// Update implements Forecaster, scoring the previous one-step forecast first.
func (t *Tracked) Update(x float64) {
	if t.n > 0 {
		f := t.Forecaster.Forecast(1)
		ae := math.Abs(x - f)
		// The absolute percentage error of a quiet window is measured against 1 request/s,
		// so an idle window does not divide by zero.
		t.lastAPE = ae / math.Max(x, 1)
		t.sumAPE += t.lastAPE
		t.sumAE += ae
	}
	t.n++
	t.Forecaster.Update(x)
}

// MAPE returns the mean absolute percentage error of the one-step forecasts so far (0
// before two observations).
func (t *Tracked) MAPE() float64 {
	if t.n < 2 {
		return 0
	}
	return t.sumAPE / float64(t.n-1)
}

// MAE returns the mean absolute error of the one-step forecasts so far, in the series' unit.
func (t *Tracked) MAE() float64 {
	if t.n < 2 {
		return 0
	}
	return t.sumAE / float64(t.n-1)
}

// Observations returns how many observations it has seen.
func (t *Tracked) Observations() int { return t.n }
