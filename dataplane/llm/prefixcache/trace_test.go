package prefixcache

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The replay both caches run: every row arrives at its timestamp, looks up its prompt,
// takes ceil(input/block) blocks (admission-style) or is refused when they do not fit, caches
// its full prompt blocks, and frees all of them holdMsPerToken × output_length ms later
// (frees before arrivals at the same ms). The two caches differ in everything else.

const holdMsPerToken = 15

type event struct {
	t    int64
	free bool
	row  int
}

func schedule(rows []TraceRow) []event {
	ev := make([]event, 0, 2*len(rows))
	for i, r := range rows {
		ev = append(ev, event{t: r.TimestampMs, row: i}, event{t: r.TimestampMs + int64(r.OutputLength)*holdMsPerToken, free: true, row: i})
	}
	sort.SliceStable(ev, func(i, j int) bool {
		if ev[i].t != ev[j].t {
			return ev[i].t < ev[j].t
		}
		return ev[i].free && !ev[j].free
	})
	return ev
}

// outcome is what a replay measured: per row the hit in blocks (−1: refused).
type outcome struct {
	hits             []int
	queries, hitToks int64
	evictions        int64
}

func replayPool(rows []TraceRow, numBlocks, blockSize int) outcome {
	p := New(numBlocks, blockSize, true)
	o := outcome{hits: make([]int, len(rows))}
	for _, e := range schedule(rows) {
		r := rows[e.row]
		if e.free {
			p.Free(int64(e.row))
			continue
		}
		hashes := r.Prompt(512, UniqueID(uint64(e.row))).Hashes(nil, blockSize, r.InputLength)
		hit := p.Lookup(hashes, r.InputLength)
		if !p.Allocate(int64(e.row), hashes, hit, p.BlocksFor(r.InputLength)) {
			o.hits[e.row] = -1
			continue
		}
		p.Cache(int64(e.row), r.InputLength/blockSize)
		o.hits[e.row] = hit
	}
	s := p.Stats()
	o.queries, o.hitToks, o.evictions = s.Queries, s.Hits, s.Evictions
	return o
}

// refCache is the deliberately simple reference: a block's key is the text of the token
// identities its prefix ends with (the hash ids up to the one holding its last token, and
// that token's position), the LRU order a plain slice scanned linearly, the cache a map from
// key to the blocks holding it in registration order. No hashing, no linked list.
type refCache struct {
	ref   []int
	key   []string
	free  []int // front = evicted first
	cache map[string][]int
	held  map[int][]int
	evict int64
}

func newRef(n int) *refCache {
	c := &refCache{ref: make([]int, n), key: make([]string, n), cache: map[string][]int{}, held: map[int][]int{}}
	for b := range n {
		c.free = append(c.free, b)
	}
	return c
}

// refKeys are a row's full-block keys at blockSize: block j ends at token t = (j+1)·bs − 1,
// whose identity is (hash_ids[t/512], t mod 512); equal ids up to there and equal t mean an
// equal token prefix.
func refKeys(r TraceRow, blockSize int) []string {
	var keys []string
	for j := 0; (j+1)*blockSize <= r.InputLength; j++ {
		t := (j+1)*blockSize - 1
		keys = append(keys, fmt.Sprint(r.HashIDs[:t/512+1], "@", t))
	}
	return keys
}

func (c *refCache) remove(b int) {
	i := slices.Index(c.free, b)
	c.free = slices.Delete(c.free, i, i+1)
}

func replayRef(rows []TraceRow, numBlocks, blockSize int) outcome {
	c := newRef(numBlocks)
	o := outcome{hits: make([]int, len(rows))}
	for _, e := range schedule(rows) {
		r := rows[e.row]
		if e.free {
			bs := c.held[e.row]
			for i := len(bs) - 1; i >= 0; i-- {
				c.ref[bs[i]]--
				if c.ref[bs[i]] == 0 {
					c.free = append(c.free, bs[i])
				}
			}
			delete(c.held, e.row)
			continue
		}
		keys := refKeys(r, blockSize)
		hit := 0
		for hit < len(keys) && (hit+1)*blockSize <= r.InputLength-1 && len(c.cache[keys[hit]]) > 0 {
			hit++
		}
		o.queries += int64(r.InputLength)
		o.hitToks += int64(hit * blockSize)
		need := (r.InputLength + blockSize - 1) / blockSize
		cost := need - hit
		for _, k := range keys[:hit] {
			if c.ref[c.cache[k][0]] == 0 {
				cost++
			}
		}
		if cost > len(c.free) {
			o.hits[e.row] = -1
			continue
		}
		var bs []int
		for _, k := range keys[:hit] {
			b := c.cache[k][0]
			if c.ref[b] == 0 {
				c.remove(b)
			}
			c.ref[b]++
			bs = append(bs, b)
		}
		for len(bs) < need {
			b := c.free[0]
			c.free = c.free[1:]
			if k := c.key[b]; k != "" {
				i := slices.Index(c.cache[k], b)
				c.cache[k] = slices.Delete(c.cache[k], i, i+1)
				c.key[b] = ""
				c.evict++
			}
			c.ref[b] = 1
			bs = append(bs, b)
		}
		for j, k := range keys {
			if j >= hit && c.key[bs[j]] == "" {
				c.key[bs[j]] = k
				c.cache[k] = append(c.cache[k], bs[j])
			}
		}
		c.held[e.row] = bs
		o.hits[e.row] = hit
	}
	o.evictions = c.evict
	return o
}

// TestPoolMatchesReference replays generated session traces through the pool and through
// the reference and requires the same hit (or refusal) for every request, the same token
// counters and the same evictions, on pools small enough to evict and large enough to
// keep most of what is shared.
func TestPoolMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		name       string
		seed       int64
		blockSize  int
		blocks     int
		wantRefuse bool
	}{
		{"bs16-tight", 1, 16, 3000, true},
		{"bs16-roomy", 2, 16, 6000, false},
		{"bs512", 3, 512, 200, false},
		{"bs64-odd-seed", 7, 64, 1500, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultSessions(tc.seed)
			rows, err := Sessions(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := replayPool(rows, tc.blocks, tc.blockSize)
			want := replayRef(rows, tc.blocks, tc.blockSize)
			for i := range rows {
				if got.hits[i] != want.hits[i] {
					t.Fatalf("row %d (session %d turn %d): pool hit %d blocks, reference %d", i, rows[i].Session, rows[i].Turn, got.hits[i], want.hits[i])
				}
			}
			if got.queries != want.queries || got.hitToks != want.hitToks || got.evictions != want.evictions {
				t.Fatalf("pool queries %d hits %d evictions %d, reference %d %d %d", got.queries, got.hitToks, got.evictions, want.queries, want.hitToks, want.evictions)
			}
			refused := 0
			for _, h := range got.hits {
				if h < 0 {
					refused++
				}
			}
			// The case must exercise what it claims: hits, evictions, refusals where expected.
			if got.hitToks == 0 || got.evictions == 0 {
				t.Fatalf("degenerate case: hits %d evictions %d", got.hitToks, got.evictions)
			}
			if (refused > 0) != tc.wantRefuse {
				t.Fatalf("%d requests refused, want refusals = %v", refused, tc.wantRefuse)
			}
			// LRU eviction costs hits against a cache that never evicts.
			inf := replayPool(rows, 1<<20, tc.blockSize)
			if got.hitToks > inf.hitToks {
				t.Fatalf("hits %d above the unbounded cache's %d", got.hitToks, inf.hitToks)
			}
			t.Logf("%d requests, hit rate %.3f (unbounded %.3f), %d evictions, %d refused", len(rows), float64(got.hitToks)/float64(got.queries), float64(inf.hitToks)/float64(inf.queries), got.evictions, refused)
		})
	}
}

// TestSessionsShape checks the generator's promises: deterministic in the seed, timestamps
// non-decreasing, len(hash_ids) = ceil(input/512), and turn k's ids extend turn k−1's full
// blocks.
func TestSessionsShape(t *testing.T) {
	a, err := Sessions(DefaultSessions(5))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Sessions(DefaultSessions(5))
	c, _ := Sessions(DefaultSessions(6))
	var sa, sb, sc strings.Builder
	_ = WriteJSONL(&sa, a)
	_ = WriteJSONL(&sb, b)
	_ = WriteJSONL(&sc, c)
	if sa.String() != sb.String() {
		t.Fatal("same seed, different traces")
	}
	if sa.String() == sc.String() {
		t.Fatal("different seeds, same trace")
	}
	last := map[int]TraceRow{}
	for i, r := range a {
		if i > 0 && r.TimestampMs < a[i-1].TimestampMs {
			t.Fatalf("row %d: timestamp %d before %d", i, r.TimestampMs, a[i-1].TimestampMs)
		}
		if want := (r.InputLength + 511) / 512; len(r.HashIDs) != want {
			t.Fatalf("row %d: %d hash ids for %d tokens, want %d", i, len(r.HashIDs), r.InputLength, want)
		}
		if p, ok := last[r.Session]; ok {
			if r.Turn != p.Turn+1 || r.InputLength <= p.InputLength+p.OutputLength {
				t.Fatalf("row %d: turn %d (%d tokens) does not extend turn %d (%d+%d)", i, r.Turn, r.InputLength, p.Turn, p.InputLength, p.OutputLength)
			}
			n := p.InputLength / 512
			if !slices.Equal(r.HashIDs[:n], p.HashIDs[:n]) {
				t.Fatalf("row %d: the first %d ids differ from the previous turn's", i, n)
			}
		}
		last[r.Session] = r
	}
	if !strings.HasPrefix(sa.String(), `{"timestamp":`) || !strings.Contains(sa.String(), `"hash_ids":[`) {
		t.Fatalf("JSONL not in Mooncake's shape: %.80s", sa.String())
	}
}
