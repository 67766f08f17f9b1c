package promcheck

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestNonEmpty: an expression with data passes; one naming an absent family, one whose
// quantile is NaN (buckets that did not move between the scrapes) and one whose selector
// matches no label fail, each named in the error.
func TestNonEmpty(t *testing.T) {
	RequirePromtool(t)
	a := read(t, "scrape_a.prom")
	b := read(t, "scrape_b.prom")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lbl := map[string]string{"job": "pods"}
	good := []string{
		`vllm:num_requests_waiting`,
		`histogram_quantile(0.5, sum by(le) (rate(vllm:e2e_request_latency_seconds_bucket{job="pods"}[5m])))`,
		`rate(app_requests_total[5m])`,
	}
	if err := NonEmpty(ctx, [][]byte{a, b}, lbl, good); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`vllm:num_requests_running`,
		`histogram_quantile(0.5, sum by(le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))`,
		`vllm:num_requests_waiting{model_name="other"}`,
	} {
		err := NonEmpty(ctx, [][]byte{a, b}, lbl, append(good[:1:1], bad))
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: %v, want an error naming it", bad, err)
		}
	}
}
