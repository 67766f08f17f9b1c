package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"strconv"
	"sync"
	"time"

	"github.com/plan-dev/plan/serve/kserve"
)

// rawClient sends infer requests over a pool of plain HTTP/1.1 keep-alive connections, one
// request at a time per connection, each connection served by one goroutine. It exists
// because the load generator shares the machine with the server it measures: net/http's
// client hands every request through its transport's pool and two goroutines per
// connection, which costs the client more CPU per request than the server spends, and a
// generator that falls behind its schedule measures itself. Requests wait in one FIFO queue
// for a free connection (the wait counts in their latency); a new connection is dialled while
// requests wait and fewer than max are open.
type rawClient struct {
	ctx        context.Context
	addr, host string
	header     http.Header           // the user's headers (--header, --api-key), on every request
	reqs       map[string]rawRequest // the request bytes per model
	max        int
	timeout    time.Duration
	work       chan rawJob
	mu         sync.Mutex
	open       int
	wg         sync.WaitGroup
}

type rawJob struct {
	t    *target
	s    *Sample
	done func()
	// begin is when the job was queued: its latency runs from there.
	begin time.Time
}

func newRawClient(ctx context.Context, base string, maxConns int, timeout time.Duration, queue int, targets []target) (*rawClient, error) {
	return newRawClientHeader(ctx, base, nil, maxConns, timeout, queue, targets)
}

// newRawClientHeader is newRawClient sending header with every request.
func newRawClientHeader(ctx context.Context, base string, header http.Header, maxConns int, timeout time.Duration, queue int, targets []target) (*rawClient, error) {
	u, err := neturl.Parse(base)
	if err != nil || u.Scheme != "http" {
		return nil, fmt.Errorf("raw client: %q: plain http only", base)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	c := &rawClient{ctx: ctx, addr: addr, host: u.Host, header: header, max: maxConns, timeout: timeout, work: make(chan rawJob, max(queue, 1)), reqs: map[string]rawRequest{}}
	for i := range targets {
		c.reqs[targets[i].name] = c.request(&targets[i])
	}
	return c, nil
}

// rawRequest is the bytes of t's infer requests around the one header that differs between
// them (kserve.TraceIndexHeader's value).
type rawRequest struct{ head, tail []byte }

// request builds the bytes of t's infer requests.
func (c *rawClient) request(t *target) rawRequest {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST /v2/models/%s/infer HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", neturl.PathEscape(t.name), c.host, len(t.body))
	// The user's headers, less those the request sets itself.
	_ = c.header.WriteSubset(&b, map[string]bool{"Host": true, "Content-Type": true, "Content-Length": true, kserve.TraceIndexHeader: true, kserve.TraceTokensHeader: true})
	fmt.Fprintf(&b, "%s: ", kserve.TraceIndexHeader)
	tail := append([]byte("\r\n\r\n"), t.body...)
	return rawRequest{head: b.Bytes(), tail: tail}
}

// appendRequest appends the bytes of request s of t to b.
func (r rawRequest) appendRequest(b []byte, s *Sample) []byte {
	b = append(b, r.head...)
	b = strconv.AppendInt(b, s.Index, 10)
	if s.InTokens > 0 || s.OutTokens > 0 {
		b = append(b, "\r\n"+kserve.TraceTokensHeader+": "...)
		b = append(b, tokensHeader(s)...)
	}
	return append(b, r.tail...)
}

// send queues one request; done is called once it is recorded in s.
func (c *rawClient) send(t *target, s *Sample, done func()) {
	c.work <- rawJob{t: t, s: s, done: done, begin: time.Now()}
	if len(c.work) > 0 {
		c.mu.Lock()
		grow := c.open < c.max
		if grow {
			c.open++
		}
		c.mu.Unlock()
		if grow {
			c.wg.Add(1)
			go c.conn()
		}
	}
}

// close stops the connection goroutines once the queue is drained.
func (c *rawClient) close() {
	close(c.work)
	c.wg.Wait()
}

// conn is one connection's goroutine: it takes queued jobs, (re)dialling as needed.
func (c *rawClient) conn() {
	defer c.wg.Done()
	var nc net.Conn
	var br *bufio.Reader
	defer func() {
		if nc != nil {
			nc.Close()
		}
	}()
	buf, wbuf := make([]byte, 0, 4096), make([]byte, 0, 4096)
	for j := range c.work {
		if c.ctx.Err() != nil {
			j.s.Latency = time.Since(j.begin)
			j.s.Stage, j.s.Reason = "client", "not-sent"
			j.done()
			continue
		}
		if nc == nil {
			var err error
			if nc, err = net.DialTimeout("tcp", c.addr, c.timeout); err != nil {
				j.s.Latency = time.Since(j.begin)
				j.s.Stage, j.s.Reason = "client", "error"
				if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
					j.s.Reason = "dial-timeout" // never sent: the server saw nothing
				}
				nc = nil
				j.done()
				continue
			}
			br = bufio.NewReaderSize(nc, 4096)
		}
		keep := c.do(nc, br, j, &buf, &wbuf)
		if !keep {
			nc.Close()
			nc = nil
		}
		j.done()
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// do sends j on nc and reads its answer; it reports whether the connection can be reused.
func (c *rawClient) do(nc net.Conn, br *bufio.Reader, j rawJob, buf, wbuf *[]byte) bool {
	s := j.s
	s.Wait = time.Since(j.begin)
	_ = nc.SetDeadline(j.begin.Add(c.timeout))
	*wbuf = c.reqs[j.t.name].appendRequest((*wbuf)[:0], s)
	if _, err := nc.Write(*wbuf); err != nil {
		s.Latency = time.Since(j.begin)
		s.Stage, s.Reason = "client", "error"
		if isTimeout(err) {
			s.Reason = ReasonCancelled
		}
		return false
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		s.Latency = time.Since(j.begin)
		s.Stage, s.Reason = "client", "error"
		if isTimeout(err) {
			s.Reason = ReasonCancelled
		}
		return false
	}
	b := (*buf)[:0]
	b, err = readAll(b, resp.Body)
	resp.Body.Close()
	*buf = b
	s.Latency = time.Since(j.begin)
	if err != nil {
		s.Stage, s.Reason = "client", "error"
		if isTimeout(err) {
			s.Reason = ReasonCancelled
		}
		return false
	}
	record(s, resp.StatusCode, b)
	return !resp.Close
}

func readAll(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// field returns the value of the first "key": in a small JSON object, as raw text (a
// string's contents without quotes), without decoding the whole body.
func field(b []byte, key string) (string, bool) {
	k := []byte(`"` + key + `":`)
	i := bytes.Index(b, k)
	if i < 0 {
		return "", false
	}
	v := b[i+len(k):]
	for len(v) > 0 && v[0] == ' ' {
		v = v[1:]
	}
	if len(v) > 0 && v[0] == '"' {
		e := bytes.IndexByte(v[1:], '"')
		if e < 0 {
			return "", false
		}
		return string(v[1 : 1+e]), true
	}
	e := 0
	for e < len(v) && v[e] != ',' && v[e] != '}' {
		e++
	}
	return string(v[:e]), true
}

// record classifies an answer as do (the net/http path) does.
func record(s *Sample, status int, body []byte) {
	s.Status = status
	switch {
	case status == http.StatusServiceUnavailable:
		r, ok1 := field(body, "reason")
		st, ok2 := field(body, "stage")
		if ok1 && ok2 && r != "" {
			s.Reason, s.Stage = r, st
		} else {
			s.Reason, s.Stage = "http-503", "server"
		}
	case status != http.StatusOK:
		s.Reason, s.Stage = "http-"+strconv.Itoa(status), "server"
	default:
		if v, ok := field(body, "latency_us"); ok {
			if us, err := strconv.ParseInt(v, 10, 64); err == nil {
				s.ServerLatency = time.Duration(us) * time.Microsecond
			}
		}
		if v, ok := field(body, "first_token_us"); ok {
			if us, err := strconv.ParseInt(v, 10, 64); err == nil {
				s.ServerFirstToken = time.Duration(us) * time.Microsecond
			}
		}
		s.readLabel(body)
	}
}
