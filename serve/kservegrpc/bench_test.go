package kservegrpc

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/serve"
	pb "github.com/plan-dev/plan/serve/kservegrpc/inferencepb"
	"github.com/plan-dev/plan/serve/load"
	"github.com/plan-dev/plan/sim"
)

// loadRate is BenchmarkLoad5000's rate (-load-rate: a smaller machine cannot offer 5,000).
var loadRate = flag.Float64("load-rate", 5000, "BenchmarkLoad5000: requests/s")

// serverEnv makes the test binary a bench server (TestMain): `plan serve` of wide.json with
// HTTP and gRPC on loopback ports, printed on stdout, until stdin closes.
const serverEnv = "PLAN_KSERVEGRPC_BENCH_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		os.Exit(benchServer())
	}
	os.Exit(m.Run())
}

func benchServer() int {
	p := loadPlan(&testing.B{}, "wide.json")
	s, err := serve.New(serve.Options{Plan: p, Deploy: testDeploy, Policies: testPolicies})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gaddr, stop, err := Start(ctx, s, "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = s.Serve(ctx, ln) }()
	fmt.Printf("%s %s\n", ln.Addr(), gaddr)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the benchmark closes stdin
	cancel()
	stop()
	return 0
}

// cpuTicks returns a process's user+system CPU time in clock ticks (/proc/PID/stat).
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s, nil
}

// BenchmarkLoad5000 compares the HTTP/JSON and the gRPC paths at 5,000 req/s (open loop,
// Poisson, `plan load`'s generator) against a server in its own process (this test binary
// re-executed) serving testdata/serve/wide.json (16,000 req/s of emulated capacity): server
// CPU per request (from /proc, the server process only) and the client-side p99. Each
// iteration is 2 s of load per protocol.
func BenchmarkLoad5000(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverEnv+"=1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	var haddr, gaddr string
	if _, err := fmt.Fscan(stdout, &haddr, &gaddr); err != nil {
		b.Fatal(err)
	}
	conn, err := Dial(gaddr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	for _, proto := range []string{"http", "grpc", "grpc-raw"} {
		b.Run(proto, func(b *testing.B) {
			var lat []time.Duration
			var ticks int64
			n := 0
			for b.Loop() {
				o := load.Options{URL: "http://" + haddr, Deploy: testDeploy, Sections: testSections, Rate: *loadRate, Duration: 2 * time.Second,
					Arrival: sim.ArrivalSpec{Kind: "poisson"}, Seed: 1, Client: &http.Client{Transport: &http.Transport{MaxConnsPerHost: 2048, MaxIdleConnsPerHost: 2048}}}
				switch proto {
				case "grpc":
					o.Send = Sender(conn, false, false)
				case "grpc-raw":
					o.Send = Sender(conn, true, false)
				}
				t0, err := cpuTicks(cmd.Process.Pid)
				if err != nil {
					b.Fatal(err)
				}
				res, err := load.Run(context.Background(), o)
				if err != nil {
					b.Fatal(err)
				}
				t1, _ := cpuTicks(cmd.Process.Pid)
				ticks += t1 - t0
				for _, s := range res.Samples {
					if s.Status == 200 {
						lat = append(lat, s.Latency)
					}
				}
				n += len(res.Samples)
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			}
			// Linux clock ticks are 10 ms (USER_HZ 100).
			b.ReportMetric(float64(ticks)*1e4/float64(max(n, 1)), "server-cpu-us/req")
			b.ReportMetric(float64(len(lat))/float64(max(n, 1)), "served-frac")
		})
	}
}

// BenchmarkModelInfer measures the gRPC service's CPU per request without the network
// (tensor decoding, serve.Server.Infer, the engine, the answer), as serve's
// BenchmarkServeHTTP does for the HTTP handler.
func BenchmarkModelInfer(b *testing.B) {
	s, err := serve.New(serve.Options{Plan: loadPlan(b, "wide.json"), Deploy: testDeploy, Policies: testPolicies})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	x := &Service{s: s}
	req := &pb.ModelInferRequest{ModelName: "w", Id: "r1", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{1, 4},
		Contents: &pb.InferTensorContents{Fp32Contents: []float32{1, 2, 3, 4}}}}}
	b.SetParallelism(64)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := x.ModelInfer(context.Background(), req); err != nil && !strings.Contains(err.Error(), "reason") {
				b.Fatal(err)
			}
		}
	})
}
