package prefixcache

import "testing"

// BenchmarkAdmitFree is one request's life on a warm pool: lookup, allocate (hits touched,
// new blocks evicting), cache, free. ns/op ÷ blocks = the per-block cost.
func BenchmarkAdmitFree(b *testing.B) {
	rows, err := Sessions(DefaultSessions(1))
	if err != nil {
		b.Fatal(err)
	}
	const bs = 16
	hashes := make([][]uint64, len(rows))
	blocks := 0
	for i, r := range rows {
		hashes[i] = r.Prompt(512, UniqueID(uint64(i))).Hashes(nil, bs, r.InputLength)
		blocks += (r.InputLength + bs - 1) / bs
	}
	p := New(8000, bs, true)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % len(rows)
		r := rows[k]
		hit := p.Lookup(hashes[k], r.InputLength)
		if p.Allocate(int64(k), hashes[k], hit, p.BlocksFor(r.InputLength)) {
			p.Cache(int64(k), r.InputLength/bs)
		}
		p.Free(int64(k))
	}
	b.ReportMetric(float64(blocks)/float64(len(rows)), "blocks/req")
	b.ReportMetric(p.Stats().HitRate(), "hit-rate")
}

// BenchmarkHashes is hashing a 2,000-token Mooncake prompt into 16-token blocks.
func BenchmarkHashes(b *testing.B) {
	pr := Prompt{InputTokens: 2000, HashIDs: []int64{1, 2, 3, 4}, HashBlockTokens: 512, Unique: UniqueID(9)}
	dst := make([]uint64, 0, 128)
	for i := 0; i < b.N; i++ {
		dst = pr.Hashes(dst[:0], 16, 2000)
	}
}
