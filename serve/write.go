package serve

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve/kserve"
)

func writeDrop(w http.ResponseWriter, d *kserve.DropResponse) { writeDropAfter(w, d, 0) }

// writeDropAfter answers 503 with Retry-After: the seconds until retry (at least 1, the
// shortest the header can say; 0 = the hint "next second": a dropped request's deadline is
// gone and the load that caused the drop rarely lasts longer than that).
func writeDropAfter(w http.ResponseWriter, d *kserve.DropResponse, retry dataplane.Time) {
	secs := int64(1)
	if retry > dataplane.Second {
		secs = int64((retry + dataplane.Second - 1) / dataplane.Second)
	}
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	writeJSON(w, http.StatusServiceUnavailable, d)
}

var contentTypeJSON = []string{"application/json"}

// contentLengths caches the Content-Length header values of bodies shorter than 4 KiB, the
// infer answers' sizes: net/http only reads a header's values (as it does contentTypeJSON's),
// so one slice serves every answer of a length, instead of a slice and a string per answer.
var contentLengths [4096]atomic.Pointer[[]string]

func contentLength(n int) []string {
	if n >= len(contentLengths) {
		return []string{strconv.Itoa(n)}
	}
	if p := contentLengths[n].Load(); p != nil {
		return *p
	}
	v := []string{strconv.Itoa(n)}
	contentLengths[n].Store(&v)
	return v
}

// bufPool holds the buffers answers are encoded into (kserve.AppendInferResponse).
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func writeJSON(w http.ResponseWriter, code int, v any) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	b := (*bp)[:0]
	ok := true
	switch x := v.(type) {
	case *kserve.InferResponse:
		b, ok = kserve.AppendInferResponse(b, x)
	case *kserve.DropResponse:
		b = kserve.AppendDropResponse(b, x)
	default:
		ok = false
	}
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			code = 500
			b, _ = json.Marshal(kserve.ErrorResponse{Error: "encoding the response: " + err.Error()})
		}
	}
	writeBody(w, code, bp, b)
}

// writeInfer writes a 200 infer answer without parameters (none on the response or its
// outputs: kserve.AppendInferResponse encodes it by hand). r does not escape, so the caller's
// response, its outputs and timing stay on its stack rather than being allocated per answer,
// as writeJSON's interface argument would make them; nothing may copy from r to the heap
// here (escape analysis would take all of r's pointers to escape with it).
func writeInfer(w http.ResponseWriter, r *kserve.InferResponse) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	b, ok := kserve.AppendInferResponse((*bp)[:0], r)
	if !ok {
		writeJSON(w, 500, kserve.ErrorResponse{Error: "encoding the response: parameters on the hand-encoded path"})
		return
	}
	writeBody(w, 200, bp, b)
}

// writeBody writes the JSON body b (built in the pooled buffer bp) with a newline.
func writeBody(w http.ResponseWriter, code int, bp *[]byte, b []byte) {
	b = append(b, '\n')
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = contentLength(len(b))
	w.WriteHeader(code)
	_, _ = w.Write(b)
	if cap(b) <= 64<<10 {
		*bp = b[:0]
	}
}
