package fleet

import "github.com/plan-dev/plan/formats"

// Server is one server's GPUs of one type, by index in cluster order (as export numbers
// them), and which of them an instance already holds: where the LLM planners place
// tensor-parallel instances (an instance spans GPUs of one server, QLM §2.3).
type Server struct {
	GPU string
	// Mem is the memory of one of its GPUs in bytes (0: unknown).
	Mem  int64
	GPUs []int
	used []bool
}

// Servers splits the cluster's GPUs into servers: its servers list when given (each takes the
// next GPUs of its type), else every pool in per_server chunks. GPU indices follow the
// cluster's pools in order, as export numbers them.
func Servers(c *formats.Cluster) []*Server {
	var out []*Server
	next := map[string][]int{} // type → its GPU indices not yet in a server
	mem := map[string]int64{}
	idx := 0
	for _, g := range c.GPUs {
		mem[g.Type] = g.MemoryBytes
		for range g.Count {
			next[g.Type] = append(next[g.Type], idx)
			idx++
		}
	}
	add := func(gpu string, n int) {
		n = min(n, len(next[gpu]))
		if n > 0 {
			out = append(out, &Server{GPU: gpu, Mem: mem[gpu], GPUs: next[gpu][:n], used: make([]bool, n)})
			next[gpu] = next[gpu][n:]
		}
	}
	for _, s := range c.Servers {
		add(s.GPU, s.GPUs)
	}
	for _, g := range c.GPUs {
		for len(next[g.Type]) > 0 {
			add(g.Type, max(g.PerServer, 1))
		}
	}
	return out
}

// Free is how many of the server's GPUs no instance holds.
func (s *Server) Free() int {
	n := 0
	for _, u := range s.used {
		if !u {
			n++
		}
	}
	return n
}

// TakeBestFit takes k GPUs of type gpu, lowest indices first, on the server of that type with
// the fewest free GPUs that still holds k (the first such; best fit keeps whole servers free
// for wider instances). false: no server holds k.
func TakeBestFit(srv []*Server, gpu string, k int) ([]int, bool) {
	var best *Server
	for _, s := range srv {
		if f := s.Free(); s.GPU == gpu && f >= k && (best == nil || f < best.Free()) {
			best = s
		}
	}
	if best == nil {
		return nil, false
	}
	var out []int
	for i := range best.GPUs {
		if len(out) < k && !best.used[i] {
			best.used[i] = true
			out = append(out, best.GPUs[i])
		}
	}
	return out, true
}
