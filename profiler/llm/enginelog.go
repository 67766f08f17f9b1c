package llm

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// settingColumns are the optional step-log columns (keys) that say how the engine that ran
// the log was configured: its vLLM version and the flags that change scheduling (LLM engine
// digest part 2, §1). An imported profile's engine block carries them, so a replay of the
// log's engine schedules as it did: a V0 engine reserved a whole prompt's KV blocks at
// admission where V1 allocates per chunk, and under KV pressure the two queue or preempt
// differently.
var settingColumns = []string{"vllm_version", "kv_allocation", "release", "block_size",
	"enable_prefix_caching", "max_num_batched_tokens", "max_num_seqs"}

// versionRE reads a vLLM version: "0.6.3", "v0.10.1.post1", "0.11.0rc2".
var versionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.\d+)?(?:[.+\-]?[0-9A-Za-z.]*)?$`)

// maxEngineBudget bounds the token and sequence budgets a log may state.
const maxEngineBudget = 1 << 24

// normalSetting checks value v of settings column field and returns it in one spelling.
func normalSetting(field, v string) (string, error) {
	switch field {
	case "vllm_version":
		m := versionRE.FindStringSubmatch(v)
		if m == nil {
			return "", errors.New(`must be a vLLM version such as "0.6.3" or "v0.10.1"`)
		}
		return m[1] + "." + m[2], nil
	case "kv_allocation":
		if !slices.Contains(formats.KVAllocations, v) {
			return "", fmt.Errorf("must be one of %s", strings.Join(formats.KVAllocations, ", "))
		}
	case "release":
		if !slices.Contains(formats.Releases, v) {
			return "", fmt.Errorf("must be one of %s", strings.Join(formats.Releases, ", "))
		}
	case "enable_prefix_caching":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "", errors.New("must be true or false")
		}
		return strconv.FormatBool(b), nil
	case "block_size":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1<<16 || n&(n-1) != 0 {
			return "", errors.New("must be a power of two in [1, 65536]")
		}
		return strconv.Itoa(n), nil
	case "max_num_batched_tokens", "max_num_seqs":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxEngineBudget {
			return "", fmt.Errorf("must be a whole number in [1, %d]", maxEngineBudget)
		}
		return strconv.Itoa(n), nil
	}
	return v, nil
}

// Engine is the engine block of a profile of the engine that ran the log: the scheduling
// rules its vLLM version used by default (vllm_version, formats.LLMEngine.VersionDefaults),
// overridden by the flags the log states; nil when it states neither. notes say what the
// version implied, for the user.
func (l *StepLog) Engine() (*formats.LLMEngine, []string) {
	if len(l.Settings) == 0 {
		return nil, nil
	}
	e := &formats.LLMEngine{}
	var notes []string
	var version *formats.VLLMVersion
	if v, ok := l.Settings["vllm_version"]; ok {
		pv, err := formats.ParseVLLMVersion(v)
		if err != nil {
			notes = append(notes, fmt.Sprintf("vllm_version %s: %v; the engine rules are %s's", v, err, formats.DefaultVLLMVersion))
			pv, _ = formats.ParseVLLMVersion(formats.DefaultVLLMVersion)
		}
		version = &pv
	}
	if v, ok := l.Settings["kv_allocation"]; ok {
		e.KVAllocation = v
	}
	if v, ok := l.Settings["release"]; ok {
		e.Release = v
	}
	if v, ok := l.Settings["enable_prefix_caching"]; ok {
		e.EnablePrefixCaching = new(v == "true")
	}
	atoi := func(k string) int { n, _ := strconv.Atoi(l.Settings[k]); return n }
	e.BlockSize, e.MaxNumBatchedTokens, e.MaxNumSeqs = atoi("block_size"), atoi("max_num_batched_tokens"), atoi("max_num_seqs")
	if version != nil {
		// The log's own flags are set above; the version fills the rest.
		notes = append(notes, e.VersionDefaults(*version)...)
	}
	return e, notes
}
