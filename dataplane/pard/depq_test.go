package pard

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestDEPQAgainstSortedSlice runs random operation sequences on the min-max heap and on a
// sorted slice and requires identical answers at every step.
func TestDEPQAgainstSortedSlice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		seed   uint64
		ops    int
		keyMax int64
	}{
		{"distinct keys", 1, 5000, 1 << 40},
		{"many ties", 2, 5000, 8},
		{"small", 3, 200, 100},
		{"all equal", 4, 1000, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 7))
			var q DEPQ
			var ref []depqItem
			next := dataplane.ReqID(0)
			for op := 0; op < tc.ops; op++ {
				switch c := rng.IntN(10); {
				case c < 5 || len(ref) == 0:
					it := depqItem{key: dataplane.Time(rng.Int64N(tc.keyMax)), id: next, aux: dataplane.Time(next) * 3}
					next++
					q.Push(it.key, it.id, it.aux)
					i := sort.Search(len(ref), func(i int) bool { return it.less(ref[i]) })
					ref = append(ref, depqItem{})
					copy(ref[i+1:], ref[i:])
					ref[i] = it
				case c < 7:
					k, id, aux := q.PopMin()
					want := ref[0]
					ref = ref[1:]
					if k != want.key || id != want.id || aux != want.aux {
						t.Fatalf("op %d: PopMin = (%d,%d,%d), want %+v", op, k, id, aux, want)
					}
				default:
					k, id, aux := q.PopMax()
					want := ref[len(ref)-1]
					ref = ref[:len(ref)-1]
					if k != want.key || id != want.id || aux != want.aux {
						t.Fatalf("op %d: PopMax = (%d,%d,%d), want %+v", op, k, id, aux, want)
					}
				}
				if q.Len() != len(ref) {
					t.Fatalf("op %d: Len = %d, want %d", op, q.Len(), len(ref))
				}
				if len(ref) > 0 {
					k, id, _ := q.Min()
					if k != ref[0].key || id != ref[0].id {
						t.Fatalf("op %d: Min = (%d,%d), want %+v", op, k, id, ref[0])
					}
					k, id, _ = q.Max()
					if w := ref[len(ref)-1]; k != w.key || id != w.id {
						t.Fatalf("op %d: Max = (%d,%d), want %+v", op, k, id, w)
					}
				}
			}
		})
	}
}

func BenchmarkDEPQPushPop(b *testing.B) {
	var q DEPQ
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1024; i++ {
		q.Push(dataplane.Time(rng.Int64N(1e9)), dataplane.ReqID(i), 0)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q.Push(dataplane.Time(rng.Int64N(1e9)), dataplane.ReqID(i), 0)
		if i%2 == 0 {
			q.PopMax()
		} else {
			q.PopMin()
		}
	}
}

// TestDEPQRemove removes random requests between pushes and pops and requires the heap to
// answer as a sorted slice does at every step.
func TestDEPQRemove(t *testing.T) {
	for _, tc := range []struct {
		name   string
		seed   uint64
		keyMax int64
	}{{"distinct keys", 11, 1 << 40}, {"many ties", 12, 8}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 7))
			var q DEPQ
			var ref []depqItem
			next := dataplane.ReqID(0)
			for op := 0; op < 4000; op++ {
				switch c := rng.IntN(10); {
				case c < 5 || len(ref) == 0:
					it := depqItem{key: dataplane.Time(rng.Int64N(tc.keyMax)), id: next}
					next++
					q.Push(it.key, it.id, 0)
					i := sort.Search(len(ref), func(i int) bool { return it.less(ref[i]) })
					ref = append(ref[:i], append([]depqItem{it}, ref[i:]...)...)
				case c < 7:
					i := rng.IntN(len(ref))
					if !q.Remove(ref[i].id) {
						t.Fatalf("op %d: Remove(%d) found nothing", op, ref[i].id)
					}
					ref = append(ref[:i], ref[i+1:]...)
					if q.Remove(next + 1) {
						t.Fatalf("op %d: Remove of a request never queued reported true", op)
					}
				case c < 9:
					_, id, _ := q.PopMin()
					if id != ref[0].id {
						t.Fatalf("op %d: PopMin = %d, want %d", op, id, ref[0].id)
					}
					ref = ref[1:]
				default:
					_, id, _ := q.PopMax()
					if want := ref[len(ref)-1].id; id != want {
						t.Fatalf("op %d: PopMax = %d, want %d", op, id, want)
					}
					ref = ref[:len(ref)-1]
				}
				if q.Len() != len(ref) {
					t.Fatalf("op %d: Len %d, want %d", op, q.Len(), len(ref))
				}
			}
		})
	}
}
