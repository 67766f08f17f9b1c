package llm

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ServerLog is what a vLLM server's start-up log says of the engine it started: its
// version, the arguments it was given that differ from vLLM's defaults, and the KV capacity
// it allocated. vLLM logs them at INFO as it starts (facts of its logs, any release from 0.6):
//
//	vLLM API server version 0.11.0
//	non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct', 'max_num_seqs': 128, ...}
//	Initializing a V1 LLM engine (v0.10.1) with config: ...      (V0: "Initializing an LLM engine (v0.6.3)")
//	args: Namespace(host=None, port=8000, model='...', tensor_parallel_size=1, ...)   (older: every argument)
//	GPU KV cache size: 686,320 tokens                            (V1: the KV capacity in tokens)
//	# GPU blocks: 27153, # CPU blocks: 2048                      (V0: the capacity in blocks of block_size)
type ServerLog struct {
	// Name is the log's file, for errors and notes.
	Name string
	// Version is the vLLM version logged ("" when none is).
	Version string
	// Args are the logged arguments by vLLM's name (max_num_seqs, tensor_parallel_size, ...),
	// each value as Python wrote it: strings unquoted, True/False/None as written.
	Args map[string]string
	// KVTokens is the KV capacity logged, in tokens (0: none), and KVFrom the line it came
	// from ("GPU KV cache size: 686,320 tokens", or "# GPU blocks: 27153" times the block
	// size).
	KVTokens int64
	KVFrom   string
	// KVLines is how many KV capacity lines the log holds (one per engine core: a
	// data-parallel server logs one per rank; KVTokens is the first).
	KVLines int
}

var (
	logVersionRE = regexp.MustCompile(`vLLM API server version (v?\d+\.\d+[0-9A-Za-z.+\-]*)|Initializing an? (?:V1 )?LLM engine \((v?\d+\.\d+[0-9A-Za-z.+\-]*)\)`)
	logKVTokRE   = regexp.MustCompile(`GPU KV cache size: (\d+(?:,\d{3})*) tokens`)
	logBlocksRE  = regexp.MustCompile(`# (?:GPU|gpu|cuda) blocks: (\d+(?:,\d{3})*)`)
)

// MaxServerLogBytes bounds a start-up log (a server that ran for days logs a line per few
// seconds: the start-up lines are in its first megabytes, but a whole log is accepted).
const MaxServerLogBytes = 256 << 20

// ParseServerLog reads a vLLM server's log. It fails, naming the file, when the log holds none
// of the lines above (not a vLLM server's log), or a value it cannot read.
func ParseServerLog(name string, data []byte) (*ServerLog, error) {
	l := &ServerLog{Name: name, Args: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var blocks int64
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if m := logVersionRE.FindStringSubmatch(s); m != nil && l.Version == "" {
			l.Version = strings.TrimPrefix(m[1]+m[2], "v")
		}
		if i := strings.Index(s, "non-default args: {"); i >= 0 {
			args, err := pyDict(s[i+len("non-default args: "):])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: non-default args: %v", name, line, err)
			}
			for k, v := range args {
				l.Args[k] = v
			}
		} else if i := strings.Index(s, "args: Namespace("); i >= 0 && len(l.Args) == 0 {
			args, err := pyKeywords(s[i+len("args: Namespace("):])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: args: %v", name, line, err)
			}
			l.Args = args
		}
		if m := logKVTokRE.FindStringSubmatch(s); m != nil {
			l.KVLines++
			if l.KVTokens == 0 {
				n, err := logCount(m[1])
				if err != nil {
					return nil, fmt.Errorf("%s:%d: GPU KV cache size: %q: %v", name, line, m[1], err)
				}
				l.KVTokens, l.KVFrom = n, strings.TrimSpace(m[0])
			}
		} else if m := logBlocksRE.FindStringSubmatch(s); m != nil {
			l.KVLines++
			if blocks == 0 {
				n, err := logCount(m[1])
				if err != nil {
					return nil, fmt.Errorf("%s:%d: # GPU blocks: %q: %v", name, line, m[1], err)
				}
				blocks = n
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: line %d: %v", name, line+1, err)
	}
	if l.KVTokens == 0 && blocks > 0 {
		bs := int64(16) // vLLM's default block size
		if v, ok := l.Args["block_size"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1<<16 {
				return nil, fmt.Errorf("%s: block_size: %q: must be a whole number of tokens", name, v)
			}
			bs = int64(n)
		}
		l.KVTokens, l.KVFrom = blocks*bs, fmt.Sprintf("# GPU blocks: %d × block size %d", blocks, bs)
	}
	if l.Version == "" && len(l.Args) == 0 && l.KVTokens == 0 {
		return nil, fmt.Errorf("%s: no vLLM start-up lines (\"vLLM API server version\", \"non-default args: {...}\", \"GPU KV cache size: N tokens\" or \"# GPU blocks: N\"): not a vLLM server's log?", name)
	}
	return l, nil
}

// logCount reads a count as vLLM logs it ("686,320").
func logCount(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	if err != nil || n < 1 || n > 1<<40 {
		return 0, fmt.Errorf("must be a count in [1, 2^40]")
	}
	return n, nil
}

// pyDict reads the Python dict repr at the start of s ({'key': value, ...}): its keys and
// each value's text (a string unquoted; anything else as written).
func pyDict(s string) (map[string]string, error) {
	if !strings.HasPrefix(s, "{") {
		return nil, fmt.Errorf("want a {...} dict")
	}
	out := map[string]string{}
	i := 1
	for {
		i = pySpace(s, i)
		if i < len(s) && s[i] == '}' {
			return out, nil
		}
		key, j, err := pyValue(s, i)
		if err != nil {
			return nil, err
		}
		j = pySpace(s, j)
		if j >= len(s) || s[j] != ':' {
			return nil, fmt.Errorf("at %d: want ':' after key %q", j, key)
		}
		val, k, err := pyValue(s, pySpace(s, j+1))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", key, err)
		}
		out[key] = val
		k = pySpace(s, k)
		switch {
		case k < len(s) && s[k] == ',':
			i = k + 1
		case k < len(s) && s[k] == '}':
			return out, nil
		default:
			return nil, fmt.Errorf("at %d: want ',' or '}' after %s", k, key)
		}
	}
}

// pyKeywords reads Namespace(...)'s key=value list (s starts after the parenthesis).
func pyKeywords(s string) (map[string]string, error) {
	out := map[string]string{}
	i := 0
	for {
		i = pySpace(s, i)
		if i < len(s) && s[i] == ')' {
			return out, nil
		}
		j := i
		for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		if j == i || j >= len(s) || s[j] != '=' {
			return nil, fmt.Errorf("at %d: want key=value", i)
		}
		key := s[i:j]
		val, k, err := pyValue(s, j+1)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", key, err)
		}
		out[key] = val
		k = pySpace(s, k)
		switch {
		case k < len(s) && s[k] == ',':
			i = k + 1
		case k < len(s) && s[k] == ')':
			return out, nil
		default:
			return nil, fmt.Errorf("at %d: want ',' or ')' after %s", k, key)
		}
	}
}

func pySpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// pyValue reads one Python repr value at s[i:]: a quoted string (returned unquoted), or
// anything else up to the ',' '}' or ')' that ends it outside brackets and quotes (returned
// as written: 128, 0.9, True, None, ['a'], LoRAModulePath(name='x', ...)).
func pyValue(s string, i int) (string, int, error) {
	if i >= len(s) {
		return "", i, fmt.Errorf("the line ends before a value")
	}
	if q := s[i]; q == '\'' || q == '"' {
		var b strings.Builder
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				if j+1 < len(s) {
					j++
					b.WriteByte(s[j])
				}
			case q:
				return b.String(), j + 1, nil
			default:
				b.WriteByte(s[j])
			}
		}
		return "", len(s), fmt.Errorf("a string that does not end")
	}
	depth := 0
	var quote byte
	for j := i; j < len(s); j++ {
		c := s[j]
		if quote != 0 {
			if c == '\\' {
				j++
			} else if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"':
			quote = c
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 {
				return strings.TrimSpace(s[i:j]), j, nil
			}
			depth--
		case ',':
			if depth == 0 {
				return strings.TrimSpace(s[i:j]), j, nil
			}
		}
	}
	return "", len(s), fmt.Errorf("a value that does not end")
}
