package workload

import (
	"fmt"
	"slices"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// ReplayClass is what assigning a trace's requests needs of an LLM class: its name, its
// model and the most prompt and output tokens it allows (0 = no bound).
type ReplayClass struct {
	Name, Model   string
	MaxIn, MaxOut int
}

// ReplayRequest is one trace request assigned to a class: its trace index (Row), the class
// (an index into the classes given), its time and its tokens (0 = not given).
type ReplayRequest struct {
	Row     int
	Class   int
	T       dataplane.Time
	In, Out int32
}

// AssignTrace assigns every request of a per-request trace to exactly one LLM class, for an
// exact replay (LLM engine digest §5: fidelity is judged by replaying a
// list of requests with their arrival times and prompt and output tokens). The rule, shared
// by `plan simulate --trace` and `plan load --trace`:
//   - `class: C`, or `target: C` naming a class: that class;
//   - `target: M` naming a model: the classes of model M in turn (round-robin in trace
//     order, over the classes in their order);
//   - neither: every class in turn (round-robin in trace order), so a trace of n untargeted
//     requests is n requests, never n per class.
//
// Errors name the trace (name), the request's field and its value: an unknown class or
// target, tokens beyond the class's maximum.
func AssignTrace(name string, t *formats.Trace, classes []ReplayClass) ([]ReplayRequest, error) {
	if len(t.Requests) == 0 {
		return nil, fmt.Errorf("%s: requests: an exact replay needs per-request arrivals (the trace has none)", name)
	}
	if len(classes) == 0 {
		return nil, fmt.Errorf("%s: no LLM class to replay the trace's requests as", name)
	}
	byName := map[string]int{}
	byModel := map[string][]int{}
	for i, c := range classes {
		byName[c.Name] = i
		byModel[c.Model] = append(byModel[c.Model], i)
	}
	turn := map[string]int{} // round-robin position per model ("" = every class)
	out := make([]ReplayRequest, 0, len(t.Requests))
	for i, r := range t.Requests {
		at := fmt.Sprintf("%s: requests[%d]", name, i)
		if r.TimeUs < 0 || (i > 0 && r.TimeUs < t.Requests[i-1].TimeUs) {
			return nil, fmt.Errorf("%s.t_us: %d: timestamps must be >= 0 and non-decreasing", at, r.TimeUs)
		}
		c, err := classOf(at, r, byName, byModel, turn, len(classes))
		if err != nil {
			return nil, err
		}
		if err := checkTokens(at, classes[c].Name, "input_tokens", r.InputTokens, classes[c].MaxIn); err != nil {
			return nil, err
		}
		if err := checkTokens(at, classes[c].Name, "output_tokens", r.OutputTokens, classes[c].MaxOut); err != nil {
			return nil, err
		}
		out = append(out, ReplayRequest{Row: i, Class: c, T: dataplane.Time(r.TimeUs), In: int32(r.InputTokens), Out: int32(r.OutputTokens)})
	}
	return out, nil
}

// classOf is the class request r (at = where it is, for errors) belongs to.
func classOf(at string, r formats.TraceRequest, byName map[string]int, byModel map[string][]int, turn map[string]int, n int) (int, error) {
	if r.Class != "" {
		c, ok := byName[r.Class]
		if !ok {
			return 0, fmt.Errorf("%s.class: %q: not an LLM class of the plan", at, r.Class)
		}
		if r.Target != "" && r.Target != r.Class && !slices.Contains(byModel[r.Target], c) {
			return 0, fmt.Errorf("%s.target: %q: class %q is not of that model or class", at, r.Target, r.Class)
		}
		return c, nil
	}
	if r.Target != "" {
		if c, ok := byName[r.Target]; ok {
			return c, nil
		}
		cs := byModel[r.Target]
		if len(cs) == 0 {
			return 0, fmt.Errorf("%s.target: %q: neither a class of the plan nor the model of one", at, r.Target)
		}
		c := cs[turn[r.Target]%len(cs)]
		turn[r.Target]++
		return c, nil
	}
	c := turn[""] % n
	turn[""]++
	return c, nil
}

// checkTokens refuses a trace request's token count above its class's maximum: the class
// (and the engine behind it, vLLM's max_model_len) cannot hold it.
func checkTokens(at, class, field string, v, maxTokens int) error {
	if v < 0 {
		return fmt.Errorf("%s.%s: %d: must be >= 0", at, field, v)
	}
	if maxTokens > 0 && v > maxTokens {
		return fmt.Errorf("%s.%s: %d: more than class %q allows (%s.max %d)", at, field, v, class, field, maxTokens)
	}
	return nil
}
