package load

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/internal/run"
)

// CheckTarget accepts an http or https base URL (no path) of any host for flag (a name such as
// "--openai", or "URL" for the argument). A host that is not loopback is accepted with one
// line on stderr: the benchmark's traffic leaves this machine. Any other scheme is a usage
// error naming the flag and the value.
func CheckTarget(stderr io.Writer, flag, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", run.UsageErrorf("%s: %q: must be an http:// or https:// URL (http://HOST:PORT)", flag, raw)
	}
	if u.User != nil {
		return "", run.UsageErrorf("%s: %q: no user info in the URL: give credentials with --api-key or --header", flag, u.Redacted())
	}
	if u.Path != "" && u.Path != "/" {
		return "", run.UsageErrorf("%s: %q: give the server's base URL, without a path", flag, raw)
	}
	if !isLoopbackHost(u.Hostname()) {
		fmt.Fprintf(stderr, "load: %s is not on this machine: the benchmark's traffic goes off this machine to %s\n", flag, u.Host)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func isLoopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// requestHeaders builds the headers every request carries: each --header "Name: value", and
// an API key (--api-key, else with --openai the OPENAI_API_KEY environment variable, as vllm
// bench serve reads it) as Authorization: Bearer. The key is never printed.
func requestHeaders(headers []string, apiKey string, useEnv bool) (http.Header, error) {
	h := http.Header{}
	for _, raw := range headers {
		name, value, ok := strings.Cut(raw, ":")
		name = strings.TrimSpace(name)
		if !ok || !validHeaderName(name) {
			return nil, run.UsageErrorf("--header %q: want \"Name: value\" (a header name, a colon, its value)", raw)
		}
		h.Add(name, strings.TrimSpace(value))
	}
	if apiKey == "" && useEnv && h.Get("Authorization") == "" {
		apiKey = os.Getenv("OPENAI_API_KEY")
	}
	if apiKey != "" {
		if h.Get("Authorization") != "" {
			return nil, run.UsageErrorf("--api-key and --header Authorization: give one")
		}
		if strings.ContainsAny(apiKey, "\r\n") {
			return nil, run.UsageErrorf("--api-key: contains a line break")
		}
		h.Set("Authorization", "Bearer "+apiKey)
	}
	if len(h) == 0 {
		return nil, nil
	}
	return h, nil
}

// validHeaderName: a non-empty RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c > 0x7e || c <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", c) {
			return false
		}
	}
	return true
}

// CheckLoopback accepts http(s) URLs whose host is a loopback address or localhost.
func CheckLoopback(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("URL %q: must be http://HOST:PORT", raw)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("URL %q: only loopback targets are allowed (127.0.0.1, ::1, localhost), not %q", raw, host)
	}
	if u.Path != "" && u.Path != "/" {
		return "", fmt.Errorf("URL %q: give the server's base URL, without a path", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// RequestRate is --request-rate's flag value: a rate > 0 in requests/s, or "inf" (every
// request at once, vllm bench serve's default). Its own flag type, because every float64
// flag must be finite (the CLI's finiteFlags) and this one may be infinite on purpose.
type RequestRate float64

func (r *RequestRate) String() string {
	if math.IsInf(float64(*r), 1) {
		return "inf"
	}
	return strconv.FormatFloat(float64(*r), 'g', -1, 64)
}

func (r *RequestRate) Set(s string) error {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, -1) || x <= 0 {
		return fmt.Errorf("%q: want requests/s > 0, or inf", s)
	}
	*r = RequestRate(x)
	return nil
}

func (r *RequestRate) Type() string { return "rate" }
