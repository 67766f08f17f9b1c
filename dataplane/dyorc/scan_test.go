package dyorc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestAvailScanCutMatchesFullWalk: availScan's join walk stopped at the least finish found
// (up: ExpLat does not fall with the batch) returns the same finish, bit for bit, as the walk
// of every batch (up false), on random plans of two services (gaps and back-to-back runs,
// short plans and plans long enough for the searches, firstEndAfter and firstStartFrom) and
// random queries.
func TestAvailScanCutMatchesFullWalk(t *testing.T) {
	cases := []struct {
		name              string
		maxBatch          int
		baseUs, perItemUs float64
		spread            float64
	}{
		{"linear", 8, 900, 150, 0},
		{"spread", 16, 2000, 40, 0.3},
		{"flat", 4, 500, 0, 0},
		{"batch-1", 1, 700, 300, 0.1},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(ci)))
			svcs := []Service{
				{Name: "a", MaxBatch: c.maxBatch, BaseUs: c.baseUs, PerItemUs: c.perItemUs, Spread: c.spread},
				{Name: "b", MaxBatch: c.maxBatch + 2, BaseUs: c.baseUs / 2, PerItemUs: c.perItemUs, Spread: c.spread},
			}
			lts := make([][]float64, len(svcs))
			for sv := range svcs {
				lts[sv] = make([]float64, svcs[sv].MaxBatch+1)
				for b := range lts[sv] {
					lts[sv][b] = svcs[sv].ExpLat(b)
				}
			}
			joined := 0
			for trial := 0; trial < 3000; trial++ {
				var dv device
				now := dataplane.Time(rng.IntN(5000))
				st := now - dataplane.Time(rng.IntN(3000))
				for range rng.IntN(60) {
					sv := rng.IntN(len(svcs))
					items := 1 + rng.IntN(svcs[sv].MaxBatch)
					if rng.IntN(3) == 0 {
						st += dataplane.Time(rng.IntN(4000))
					}
					end := st + dataplane.Time(lts[sv][items])
					dv.plan = append(dv.plan, pbatch{svc: sv, items: items, start: st, end: end})
					st = end
				}
				dv.indexPlan()
				sv := rng.IntN(len(svcs))
				s := &svcs[sv]
				items := 1 + rng.IntN(s.MaxBatch+1)
				ready := float64(now) + float64(rng.IntN(20000))
				sr := float64(now) + float64(rng.IntN(3))*float64(rng.IntN(20000))
				tt := max(float64(now), ready, sr)
				lat := s.ExpLat(items)
				full := availScan(now, dv.plan, &dv, s, lts[sv], false, sv, items, ready, sr, tt, lat)
				got := availScan(now, dv.plan, &dv, s, lts[sv], true, sv, items, ready, sr, tt, lat)
				if math.Float64bits(got) != math.Float64bits(full) {
					t.Fatalf("trial %d: cut walk %v, full walk %v (plan %v, svc %d items %d ready %v sr %v)",
						trial, got, full, dv.plan, sv, items, ready, sr)
				}
				gapOnly := dv
				gapOnly.pmask = 0 // no batch to join: the gap's finish alone
				if got < availScan(now, dv.plan, &gapOnly, s, lts[sv], true, sv, items, ready, sr, tt, lat) {
					joined++ // a join won: the cut stopped at a join's finish, not the gap's
				}
			}
			if joined == 0 {
				t.Fatalf("%s: no query joined a batch: the cut was never exercised", c.name)
			}
		})
	}
}

// TestIndexPlan: indexPlan's one pass gives every batch i the first batch j > i that starts
// later than the one before it ends (or len), and the plan's service mask, as their
// definitions say, on random plans of back-to-back runs and gaps (empty and one-batch plans,
// services past 63 sharing the top bit), with and without kept batches (preTN) leading the
// plan, reusing the device's pnext as rebuilds do.
func TestIndexPlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	var dv device
	for trial := 0; trial < 2000; trial++ {
		dv.plan = dv.plan[:0]
		st := dataplane.Time(rng.IntN(1000))
		for range rng.IntN(40) {
			if rng.IntN(4) == 0 {
				st += dataplane.Time(1 + rng.IntN(500))
			}
			end := st + dataplane.Time(1+rng.IntN(900))
			dv.plan = append(dv.plan, pbatch{svc: rng.IntN(70), items: 1, start: st, end: end})
			st = end
		}
		// Kept batches (preTN) on the plan's leading back-to-back run, with preTMask their
		// services after the first, plus, at times, a bit a cut left behind.
		pl := dv.plan
		run := min(len(pl), 1)
		for run < len(pl) && pl[run].start == pl[run-1].end {
			run++
		}
		dv.preTN, dv.preTMask = 0, 0
		var extra uint64
		if run > 0 && rng.IntN(2) == 0 {
			dv.preTN = 1 + rng.IntN(run)
			for _, b := range pl[1:dv.preTN] {
				dv.preTMask |= svcBit(b.svc)
			}
			if rng.IntN(3) == 0 {
				extra = svcBit(rng.IntN(70))
				dv.preTMask |= extra
			}
		}
		dv.indexPlan()
		var mask uint64
		for i := range pl {
			mask |= svcBit(pl[i].svc)
			want := len(pl)
			for j := i + 1; j < len(pl); j++ {
				if pl[j].start != pl[j-1].end {
					want = j
					break
				}
			}
			if len(dv.pnext) != len(pl) || int(dv.pnext[i]) != want {
				t.Fatalf("trial %d: pnext %v, batch %d want %d (plan %v)", trial, dv.pnext, i, want, pl)
			}
		}
		if dv.pmask&^extra != mask&^extra || dv.pmask|extra != mask|extra {
			t.Fatalf("trial %d: pmask %x, want %x", trial, dv.pmask, mask)
		}
	}
}

// TestFirstAfter: the galloping searches (firstEndAfter, firstStartFrom) find the first batch
// that ends after, or starts at or after, a bound, as a linear scan does, on random plans of
// up to 300 batches, with bounds before the plan, at and between its times, and past it.
func TestFirstAfter(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	for trial := 0; trial < 5000; trial++ {
		var pl []pbatch
		st := dataplane.Time(rng.IntN(100))
		for range rng.IntN(300) {
			st += dataplane.Time(rng.IntN(3))
			end := st + dataplane.Time(rng.IntN(3))
			pl = append(pl, pbatch{svc: 0, items: 1, start: st, end: end})
			st = end
		}
		x := dataplane.Time(rng.IntN(int(st) + 20))
		if rng.IntN(2) == 0 && len(pl) > 0 { // often near the head, as the walks search
			x = pl[min(rng.IntN(6), len(pl)-1)].start
		}
		got, want := firstStartFrom(pl, float64(x)), 0
		for want < len(pl) && pl[want].start < x {
			want++
		}
		if got != want {
			t.Fatalf("trial %d: %d batches, start ≥ %d: firstStartFrom %d, want %d", trial, len(pl), x, got, want)
		}
		got, want = firstEndAfter(pl, float64(x)), 0
		for want < len(pl) && pl[want].end <= x {
			want++
		}
		if got != want {
			t.Fatalf("trial %d: %d batches, end > %d: firstEndAfter %d, want %d", trial, len(pl), x, got, want)
		}
	}
}
