package openai

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	dq "github.com/plan-dev/plan/dataplane/qlm"
)

func TestDefaultQueueDir(t *testing.T) {
	home := t.TempDir()
	state := t.TempDir()
	for _, tc := range []struct {
		name, xdg, addr, want string
	}{
		{"XDG_STATE_HOME", state, "127.0.0.1:8080", filepath.Join(state, "plan", "queue", "127.0.0.1_8080")},
		{"home", "", "127.0.0.1:8080", filepath.Join(home, ".local", "state", "plan", "queue", "127.0.0.1_8080")},
		// The XDG specification ignores a relative path.
		{"relative XDG ignored", "rel/dir", ":8080", filepath.Join(home, ".local", "state", "plan", "queue", "_8080")},
		{"IPv6", state, "[::1]:9000", filepath.Join(state, "plan", "queue", "___1__9000")},
		{"no address", state, "", filepath.Join(state, "plan", "queue", "default")},
		{"no traversal", state, "../../etc", filepath.Join(state, "plan", "queue", ".._.._etc")},
		// A service with no home still gets a directory of its own.
		{"no home", "", "127.0.0.1:8080", filepath.Join(os.TempDir(), "plan", "queue", "127.0.0.1_8080")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			if tc.name == "no home" {
				t.Setenv("HOME", "")
			}
			t.Setenv("XDG_STATE_HOME", tc.xdg)
			if got := DefaultQueueDir(tc.addr); got != tc.want {
				t.Errorf("DefaultQueueDir(%q) = %q; want %q", tc.addr, got, tc.want)
			}
		})
	}
}

func TestCheckQueueURL(t *testing.T) {
	for _, tc := range []struct {
		url, err string
	}{
		{"", ""},
		{"nats://127.0.0.1:4222", ""},
		{"nats://a:4222,nats://b:4222", ""},
		{"tls://nats.example:4222", ""},
		{"http://127.0.0.1:4222", `not a NATS URL: "http://127.0.0.1:4222" has scheme "http"`},
		{"127.0.0.1:4222", "not a NATS URL"},
		{"nats://", "names no host"},
		{"nats://a:4222,redis://b", `"redis://b" has scheme "redis"`},
	} {
		err := CheckQueueURL(tc.url)
		if tc.err == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.url, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--queue-url") {
			t.Errorf("%q: %v; want an error naming --queue-url with %q", tc.url, err, tc.err)
		}
	}
}

// TestConfigure: the queue flags are checked, and the directory defaults per address only
// when neither --queue-dir nor --queue-url is given.
func TestConfigure(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	for _, tc := range []struct {
		name         string
		dir, url     string
		ttl          time.Duration
		wantDir, err string
	}{
		{"default dir", "", "", DefaultResultTTL, filepath.Join(state, "plan", "queue", "127.0.0.1_8080"), ""},
		{"dir given", "/srv/q", "", DefaultResultTTL, "/srv/q", ""},
		{"url given", "", "nats://q:4222", DefaultResultTTL, "", ""},
		{"forever", "", "", 0, filepath.Join(state, "plan", "queue", "127.0.0.1_8080"), ""},
		{"bad url", "", "https://q", DefaultResultTTL, "", "--queue-url"},
		{"negative ttl", "", "", -time.Hour, "", "--queue-result-ttl"},
		{"tiny ttl", "", "", time.Millisecond, "", "--queue-result-ttl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := New(dq.Kind)
			f.QueueDir, f.QueueURL, f.QueueResultTTL = tc.dir, tc.url, tc.ttl
			err := f.Configure("127.0.0.1:8080")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil || f.QueueDir != tc.wantDir {
				t.Errorf("QueueDir %q, %v; want %q", f.QueueDir, err, tc.wantDir)
			}
		})
	}
}

// TestResultTTL: the status bucket carries --queue-result-ttl as its TTL (0: none), on a
// new store and on one an older server created without it.
func TestResultTTL(t *testing.T) {
	dir := t.TempDir()
	for _, ttl := range []time.Duration{0, time.Hour, 24 * time.Hour} {
		q, err := OpenJetStream(context.Background(), JetStreamOptions{Dir: dir, ResultTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		h, err := q.handles(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		st, err := h.kv.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.TTL() != ttl {
			t.Errorf("bucket TTL %v, want %v", st.TTL(), ttl)
		}
		_ = q.Close()
	}
}

// TestReadyFollowsQueueURL: with a --queue-url nothing listens on yet, /v2/health/ready is
// 503 naming the queue; once a JetStream server comes up there, readiness turns 200 without
// a restart and the queue takes requests (it stayed 200, and a queue that
// failed once stayed failed).
func TestReadyFollowsQueueURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	fe := New(dq.Kind)
	fe.QueueURL, fe.QueueWorkers = "nats://127.0.0.1:"+strconv.Itoa(port), 1
	_, url := qlmServer(t, fe)
	ready := func() (int, string) {
		resp, err := http.Get(url + "/v2/health/ready")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := ready(); code != 503 || !strings.Contains(body, "batch queue") {
		t.Fatalf("queue unreachable: ready %d %s; want 503 naming the batch queue", code, body)
	}
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	defer func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	}()
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats server did not start")
	}
	var code int
	var body string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if code, body = ready(); code == 200 {
			break
		}
	}
	if code != 200 {
		t.Fatalf("queue reachable: ready %d %s; want 200", code, body)
	}
	st := enqueue(t, url, `{"model":"mistral-chat","prompt":"late queue","max_tokens":2}`)
	var got Status
	b, _ := json.Marshal(waitDone(t, url, st.ID))
	_ = json.Unmarshal(b, &got)
	if got.Status != StatusCompleted {
		t.Errorf("queued request after the queue came up: %+v", got)
	}
}
