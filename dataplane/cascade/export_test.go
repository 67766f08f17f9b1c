package cascade

// SetScan makes p route and forward by scanning every replica (the reference the index of
// deficit.go must reproduce).
func SetScan(p *Policy, on bool) { p.scan = on }

// CheckRoute makes p report every indexed deficit-routing choice with the scan's.
func CheckRoute(p *Policy, f func(index, scan int)) { p.checkRoute = f }

// GearRecords is the number of per-request gear records p keeps.
func GearRecords(p *Policy) int { return p.nGear }

// CocktailCounts is p's counted active replicas and held GPUs, and the same by a scan of
// every replica (what scale and account counted before the index kept them).
func CocktailCounts(p *Cocktail) (active, held, scanActive, scanHeld int) {
	for k := range p.reps {
		if p.active[k] {
			scanActive++
		}
		if p.active[k] || p.loading[k] || p.resident[k] {
			scanHeld += len(p.gpus[k])
		}
	}
	return p.ix.nActive, p.ix.held, scanActive, scanHeld
}

// CocktailPick is p's least-loaded routing choice by its index and by the scan.
func CocktailPick(p *Cocktail) (index, scan int) { return p.pick(), p.pickScan() }
