package dataplane

import "math/bits"

// doneSet records, one bit per held request, which requests have reached an outcome. Compact
// retires the finished prefix of the request table, and reading each record's Outcome for
// that was a cold stream: by the time a compaction runs, its records were last touched when
// they finished, and at 16× the cluster the table holds half a million of them (~90 MB).
// The bits of the same requests are 1/1536 of that and stay in cache.
type doneSet struct {
	words []uint64
	// base is the ID of bit 0 of words[0], a multiple of 64.
	base ReqID
}

// add covers request id, the next one admitted (ids come in order, from base on).
func (s *doneSet) add(id ReqID) {
	if int(id-s.base)>>6 == len(s.words) {
		s.words = append(s.words, 0)
	}
}

// set marks held request id finished.
func (s *doneSet) set(id ReqID) {
	i := uint(id - s.base)
	s.words[i>>6] |= 1 << (i & 63)
}

// run returns how many consecutive requests from id on are finished, at most limit (every
// request in [id, id+limit) must be covered).
func (s *doneSet) run(id ReqID, limit int) int {
	i, n := int(id-s.base), 0
	for n < limit {
		// The bits from i to the end of its word, shifted down: zeros come in above them, so
		// the complement's trailing zeros stop at the word's end at the latest.
		w, avail := s.words[i>>6]>>(i&63), 64-i&63
		ones := bits.TrailingZeros64(^w)
		n += ones
		if ones < avail {
			break
		}
		i += avail
	}
	return min(n, max(limit, 0))
}

// forget drops the words wholly below id (the table's new oldest request).
func (s *doneSet) forget(id ReqID) {
	w := int(id-s.base) >> 6
	s.words = s.words[w:]
	s.base += ReqID(w << 6)
}
