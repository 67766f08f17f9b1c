package workload

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"slices"

	"github.com/plan-dev/plan/internal/base/quantile"
	"gonum.org/v1/gonum/stat"
)

// ReportKind is the kind written into simulation (and `plan load`) reports.
const ReportKind = "SimulationReport"

// Report is the deterministic, JSON-serializable result of a load sweep. It holds no wall-clock
// values, so the same inputs and seed give byte-identical files. `plan load` reuses it with
// one point per measured rate.
type Report struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Plan       string `json:"plan"`
	Strategy   string `json:"strategy,omitempty"`
	Policy     string `json:"policy"`
	// Params are the policy parameters in effect (sorted keys, so stable).
	Params     map[string]string `json:"params,omitempty"`
	Trace      string            `json:"trace"`
	Seed       uint64            `json:"seed"`
	DurationUs int64             `json:"duration_us"`
	Jitter     float64           `json:"jitter,omitempty"`
	// WarmupUs is the start of the measured window in each load point: requests arriving
	// earlier were simulated but not counted (omitted when 0: every request counted).
	WarmupUs int64 `json:"warmup_us,omitempty"`
	// BaseRPS is each application's rate at load factor 1.0.
	BaseRPS []AppRate `json:"base_rps"`
	Points  []Point   `json:"points"`
	// MaxLoad99 is the highest load factor with ≥ 99% attainment whose next lower step in the
	// sweep also passes (one lucky run above failing steps does not count; 0 = none).
	MaxLoad99 float64 `json:"max_load_99"`
	// Extended is set when the sweep went past its given loads to find where attainment
	// falls (SweepConfig.FindLimit); LimitCap is the highest load it would try.
	Extended bool    `json:"extended,omitempty"`
	LimitCap float64 `json:"limit_cap,omitempty"`
	// AccuracyOn names the records the points' accuracy was judged on (Deployment.JudgeOn).
	AccuracyOn string `json:"accuracy_on,omitempty"`
	// AccuracyTarget is the plan's accuracy target (Deployment.AccuracyTarget; 0 = none):
	// a point whose accuracy falls below it is flagged.
	AccuracyTarget float64 `json:"accuracy_target,omitempty"`
}

// AppRate names an application's base rate.
type AppRate struct {
	App string  `json:"app"`
	RPS float64 `json:"rps"`
}

// Point is one load factor's result.
type Point struct {
	Load float64 `json:"load"`
	Metrics
	// Requests are every request's records when the run was asked to keep them (`plan
	// simulate --requests-out`); never part of the report itself.
	Requests []RequestRecord `json:"-"`
	// Stopped marks a run cut short once it was certain to fail its targets (a prediction's
	// loads past what a plan sustains): its metrics are partial, and it passes no test
	// (maxLoad). Never part of the report: only a prediction asks for it.
	Stopped bool `json:"-"`
}

// RequestRecord is one request's life, a line of `plan simulate --requests-out` (JSONL), to
// compare request by request with a real engine's log (LLM engine digest §5). Times are µs
// of virtual time from the start of the load point.
type RequestRecord struct {
	Load  float64 `json:"load"`
	ID    int64   `json:"id"`
	Class string  `json:"class"`
	// TraceRow is the request's index in the replayed trace (omitted when not replayed).
	TraceRow  *int  `json:"trace_row,omitempty"`
	ArrivalUs int64 `json:"arrival_us"`
	// FirstTokenUs is when its first output token reached the client (omitted when its
	// policy stamped none: not an LLM request, or dropped before it).
	FirstTokenUs *int64 `json:"first_token_us,omitempty"`
	DoneUs       int64  `json:"done_us"`
	Outcome      string `json:"outcome"`
	Reason       string `json:"reason,omitempty"`
	InputTokens  int32  `json:"input_tokens,omitempty"`
	OutputTokens int32  `json:"output_tokens,omitempty"`
	// CachedTokens are the prompt tokens its engine found in the prefix cache (vLLM's
	// num_cached_tokens), Preemptions how often it was preempted (omitted when 0).
	CachedTokens int32 `json:"cached_tokens,omitempty"`
	Preemptions  int32 `json:"preemptions,omitempty"`
}

// PointSeed derives the seed of one application at one load factor from the sweep seed, so a
// point's result does not depend on which other points run or in which order.
func PointSeed(seed uint64, load float64, app int) uint64 {
	h := fnv.New64a()
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], seed)
	binary.LittleEndian.PutUint64(b[8:], math.Float64bits(load))
	binary.LittleEndian.PutUint64(b[16:], uint64(app))
	h.Write(b[:])
	return h.Sum64()
}

// MaxLoadAt returns the highest load whose attainment (every application's, as in the
// paper) is ≥ target and whose next lower load, if any, passes too. Points must be sorted by
// load.
func MaxLoadAt(points []Point, target float64) float64 {
	return maxLoad(points, func(p *Point) bool {
		for _, a := range p.Apps {
			if a.Requests > 0 && a.Attainment < target {
				return false
			}
		}
		return true
	})
}

// MaxLoadAtMean is MaxLoadAt with the mean of the applications' attainments as the test
// (how the PPipe paper scores a model group: "at 1.0: 99.3/97.6/98.4%, mean 98.4%").
func MaxLoadAtMean(points []Point, target float64) float64 {
	return maxLoad(points, func(p *Point) bool {
		var sum float64
		n := 0
		for _, a := range p.Apps {
			if a.Requests > 0 {
				sum += a.Attainment
				n++
			}
		}
		return n == 0 || sum/float64(n) >= target
	})
}

func maxLoad(points []Point, holds func(*Point) bool) float64 {
	pass := func(p *Point) bool { return !p.Stopped && holds(p) }
	for i := len(points) - 1; i >= 0; i-- {
		if !pass(&points[i]) {
			continue
		}
		if i > 0 && !pass(&points[i-1]) {
			continue
		}
		return points[i].Load
	}
	return 0
}

// MaxLoadAtApp is MaxLoadAt for one application (index into Point.Apps).
func MaxLoadAtApp(points []Point, app int, target float64) float64 {
	one := make([]Point, len(points))
	for i, p := range points {
		one[i] = Point{Load: p.Load, Stopped: p.Stopped}
		if app < len(p.Apps) {
			one[i].Apps = []AppMetrics{p.Apps[app]}
		}
	}
	return MaxLoadAt(one, target)
}

// Metrics are the results of one run. Every field is derived from virtual time only, so the
// same inputs and seed give identical metrics (and report bytes).
type Metrics struct {
	// Total aggregates every application.
	Total AppMetrics   `json:"total"`
	Apps  []AppMetrics `json:"apps"`
	// Classes and GPUTypes give temporal utilization: busy time over the class's (type's)
	// physical GPUs × the run's wall time, where a GPU's busy time is the union of its
	// whole-GPU workers' busy intervals plus Σ busy/v of its 1/v slices.
	Classes  []Utilization `json:"classes"`
	GPUTypes []Utilization `json:"gpu_types"`
	Events   int64         `json:"events"`
	// EndUs is when the last request finished (the run's wall time in virtual µs).
	EndUs int64 `json:"end_us"`
	// LLMEngine is what the policy that drove LLM engines reports of the run (nil for
	// other systems, so their reports are unchanged).
	LLMEngine *LLMEngine `json:"llm_engine,omitempty"`
}

// LLMEngine is a run's LLM engine summary (dataplane/llm.RunStats): the policy that ran,
// the preemption events (vLLM's vllm:num_preemptions_total counts events) and the distinct
// requests preempted, and every engine setting that differs from vLLM's defaults, as
// "name=value".
type LLMEngine struct {
	Policy            string   `json:"policy"`
	Preemptions       int64    `json:"preemptions"`
	PreemptedRequests int64    `json:"preempted_requests"`
	Settings          []string `json:"settings,omitempty"`
	// PrefixCacheQueries and PrefixCacheHits are the prompt tokens looked up in the engines'
	// prefix caches and those found cached (vLLM's vllm:prefix_cache_queries and _hits,
	// tokens), HitRate = hits/queries; omitted without prefix caching.
	PrefixCacheQueries int64   `json:"prefix_cache_queries,omitempty"`
	PrefixCacheHits    int64   `json:"prefix_cache_hits,omitempty"`
	PrefixCacheHitRate float64 `json:"prefix_cache_hit_rate,omitempty"`
	// KVOffloadQueries and KVOffloadHits are the prompt tokens the GPU's prefix cache missed
	// that were looked up in the CPU offload tier (kv_offload_bytes) and those loaded back
	// from it (vLLM's vllm:external_prefix_cache_queries and _hits), HitRate = hits/queries;
	// omitted without an offload tier.
	KVOffloadQueries int64   `json:"kv_offload_queries,omitempty"`
	KVOffloadHits    int64   `json:"kv_offload_hits,omitempty"`
	KVOffloadHitRate float64 `json:"kv_offload_hit_rate,omitempty"`
}

// AppMetrics are one application's (or the total's) request outcomes.
type AppMetrics struct {
	Name       string  `json:"name"`
	OfferedRPS float64 `json:"offered_rps"`
	Requests   int64   `json:"requests"`
	Completed  int64   `json:"completed"`
	Late       int64   `json:"late"`
	// Dropped counts the requests a policy or a failure dropped; Cancelled those the
	// driver withdrew (Engine.Cancel, DropCancelled), counted apart and never as completed
	// (omitted when 0, so runs without cancels report what they always did).
	Dropped   int64 `json:"dropped"`
	Cancelled int64 `json:"cancelled,omitempty"`
	// Attainment = share of requests completed by their deadline (neither dropped, late
	// nor cancelled); equal to the authors' (1−drop)(1−late).
	Attainment float64 `json:"attainment"`
	// GoodputRPS = on-time completions per second of the arrival window.
	GoodputRPS float64     `json:"goodput_rps"`
	Drops      []DropCount `json:"drops,omitempty"`
	// WastedGPUMs is GPU time (GPU-ms) spent on requests that were later dropped or
	// cancelled.
	WastedGPUMs float64 `json:"wasted_gpu_ms"`
	Latency     Latency `json:"latency"`
	// SLOPercentile is the latency at the percentile the application's SLO is judged at
	// (dataplane.App.SLOPercentile, a cascade's p95), present only for such SLOs.
	SLOPercentile *PercentileLatency `json:"slo_percentile,omitempty"`
	// Accuracy is the share of answered requests answered right, where the deployment
	// can judge answers (Deployment.Judge: a cascade's records); Report.AccuracyOn says on
	// which records.
	Accuracy *float64 `json:"accuracy,omitempty"`
	// LLM are the token timings of an LLM class (nil for other systems, so their reports
	// are unchanged).
	LLM *LLMMetrics `json:"llm,omitempty"`
}

// LLMMetrics are what users of LLM serving measure (LLM engine digest §3; vLLM's
// benchmark_serving): time to first token, time per output token after the first, and
// tokens, over the answered (completed or late) requests. Latency is their end-to-end
// latency.
type LLMMetrics struct {
	// TTFT = first token − arrival, of the answered requests whose policy stamped a first
	// token (Request.FirstToken).
	TTFT Latency `json:"ttft"`
	// TPOT = (finish − first token) / (output tokens − 1), in µs per token, of the stamped
	// requests with more than one output token.
	TPOT Latency `json:"tpot"`
	// PromptTokens and OutputTokens are the answered requests' tokens; OutputTokensPerS
	// the output tokens per second of the run, from the measured window's start to the
	// last finish (vLLM's benchmark client's output throughput).
	PromptTokens     int64   `json:"prompt_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	// TTFTMissed and TPOTMissed count the requests finished by their deadline that missed
	// their class's TTFT or TPOT SLO: they count as late (omitted when 0).
	TTFTMissed int64 `json:"ttft_missed,omitempty"`
	TPOTMissed int64 `json:"tpot_missed,omitempty"`
	// Unstamped counts answered requests whose policy stamped no first token (no TTFT or
	// TPOT sample; omitted when 0).
	Unstamped int64 `json:"unstamped,omitempty"`
	// Answered counts the completed and late requests; E2EMissed those of them past their
	// deadline (whatever their TTFT and TPOT): with TTFTMissed and TPOTMissed, each SLO's
	// share of requests met, judged at its own percentile (sim.LLMChecks).
	Answered  int64 `json:"answered,omitempty"`
	E2EMissed int64 `json:"e2e_missed,omitempty"`
}

// PercentileLatency is the p-th latency over every measured request, a dropped one counting
// as later than any: LatencyUs is -1 when more than 1−p of them were dropped. Met says the
// SLO holds at p: at least that share of requests finished within it (attainment ≥ p).
type PercentileLatency struct {
	Percentile float64 `json:"percentile"`
	LatencyUs  int64   `json:"latency_us"`
	Met        bool    `json:"met"`
}

// AtPercentile is the p-th latency of requests whose finished latencies are lat (µs) and
// attainment att (n requests in all).
func AtPercentile(p float64, lat []int64, n int64, att float64) *PercentileLatency {
	out := &PercentileLatency{Percentile: p, LatencyUs: -1, Met: att >= p-tieTol}
	k := int64(math.Ceil(p * float64(n))) // 1-based rank among all n
	if n == 0 {
		out.LatencyUs = 0
	} else if k >= 1 && k <= int64(len(lat)) {
		xs := lat
		if !slices.IsSorted(xs) { // the simulator passes them sorted: no copy, no sort
			xs = append([]int64(nil), lat...)
			slices.Sort(xs)
		}
		out.LatencyUs = xs[k-1]
	}
	return out
}

// AtPercentileRank is the 0-based rank of the latency AtPercentile reports among answered
// latencies, or -1 when it reads none.
func AtPercentileRank(p float64, answered int, n int64) int {
	k := int64(math.Ceil(p * float64(n)))
	if n == 0 || k < 1 || k > int64(answered) {
		return -1
	}
	return int(k - 1)
}

// AtPercentileSelected is AtPercentile of latencies lat that hold their order statistic at
// AtPercentileRank in place (quantile.Select) instead of being sorted.
func AtPercentileSelected[T ~int64](p float64, lat []T, n int64, att float64) *PercentileLatency {
	out := &PercentileLatency{Percentile: p, LatencyUs: -1, Met: att >= p-tieTol}
	if n == 0 {
		out.LatencyUs = 0
	} else if k := AtPercentileRank(p, len(lat), n); k >= 0 {
		out.LatencyUs = int64(lat[k])
	}
	return out
}

// DropCount counts drops at one stage for one reason.
type DropCount struct {
	Stage  string `json:"stage"`
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// Latency summarizes end-to-end latency of finished (completed or late) requests.
type Latency struct {
	MeanUs float64 `json:"mean_us"`
	P50Us  int64   `json:"p50_us"`
	P90Us  int64   `json:"p90_us"`
	P99Us  int64   `json:"p99_us"`
	P999Us int64   `json:"p999_us"`
	MaxUs  int64   `json:"max_us"`
}

// Utilization is the busy share of a group of GPUs.
type Utilization struct {
	Name string  `json:"name"`
	GPUs int     `json:"gpus"`
	Busy float64 `json:"busy"`
}

// Summarize is the latency summary of samples in µs (reordered in place): mean and the
// percentiles of internal/base/quantile (numpy's linear interpolation, as `vllm bench serve`
// computes its own), rounded to the µs. sim, `plan load` and `plan load --openai` all
// report with that one definition, so the same samples give the same p50 and p99 in each.
func Summarize(us []float64) Latency {
	if len(us) == 0 {
		return Latency{}
	}
	if !slices.IsSorted(us) { // the simulator passes them sorted (sim's metrics)
		slices.Sort(us)
	}
	q := func(p float64) int64 { return int64(math.Round(quantile.Percentile(us, p))) }
	return Latency{
		MeanUs: Round6(stat.Mean(us, nil)),
		P50Us:  q(summaryQs[0]), P90Us: q(summaryQs[1]), P99Us: q(summaryQs[2]), P999Us: q(summaryQs[3]),
		MaxUs: int64(us[len(us)-1]),
	}
}

// summaryQs are the percentiles of Latency.
var summaryQs = [...]float64{50, 90, 99, 99.9}

// AppendLatencyRanks appends the 0-based ranks of the order statistics SummarizeSelected
// reads among n samples (its percentiles' and the maximum).
func AppendLatencyRanks(ks []int, n int) []int {
	if n == 0 {
		return ks
	}
	for _, q := range summaryQs {
		ks = quantile.AppendRanks(ks, n, q)
	}
	return append(ks, n-1)
}

// SummarizeSelected is Summarize of integer samples in µs that hold the order statistics
// AppendLatencyRanks names in place (quantile.Select) instead of being sorted, with the same
// bits: the percentiles read the same order statistics, and the mean is the exact integer sum
// over n, which is what Summarize's floating-point sum gives whatever the order while every
// partial sum is an integer below 2^53 in magnitude. Samples past that are summarized by
// Summarize itself (sorted, on a copy).
func SummarizeSelected[T ~int64](us []T) Latency {
	n := len(us)
	if n == 0 {
		return Latency{}
	}
	var sum, abs int64
	const exact = 1 << 53
	for _, v := range us {
		x := int64(v)
		if x <= -exact || x >= exact || abs >= exact-max(x, -x) {
			fs := make([]float64, n)
			for i, v := range us {
				fs[i] = float64(v)
			}
			return Summarize(fs)
		}
		sum += x
		abs += max(x, -x)
	}
	at := func(i int) float64 { return float64(us[i]) }
	q := func(p float64) int64 { return int64(math.Round(quantile.PercentileAt(n, p, at))) }
	return Latency{
		MeanUs: Round6(float64(sum) / float64(n)),
		P50Us:  q(summaryQs[0]), P90Us: q(summaryQs[1]), P99Us: q(summaryQs[2]), P999Us: q(summaryQs[3]),
		MaxUs: int64(us[n-1]),
	}
}

// Round6 keeps six significant decimals so reports stay readable and stable.
func Round6(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return math.Round(x*1e6) / 1e6
}
