package llm

import (
	"encoding/binary"
	"hash/fnv"
	"math"

	"github.com/plan-dev/plan/formats/llmspec"
)

// Salts of the two token draws of a request (DrawTokens): its prompt and its output length.
const (
	SaltPrompt = 1
	SaltOutput = 2
)

// DrawTokens draws a token count from a class's profile: normal, truncated to [1, max]
// (QLM §6, Eq. 3), seeded by the request's ID and a salt (SaltPrompt, SaltOutput), so the
// simulator, QLM's policy and serve's emulated instances draw the same lengths for the same
// request.
func DrawTokens(t llmspec.TokenProfile, id uint64, salt uint64) int {
	u1, u2 := U01(id, salt), U01(id, salt+100)
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	x := int(math.Round(t.Mean + t.Std*z))
	return max(1, min(x, max(t.Max, 1)))
}

// U01 is a deterministic uniform in (0, 1) from (id, salt).
func U01(id, salt uint64) float64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], id)
	binary.LittleEndian.PutUint64(b[8:], salt)
	h.Write(b[:])
	return (float64(h.Sum64()>>11) + 0.5) / (1 << 53)
}
