package cascade

// SetScan makes p route and forward by scanning every replica (the reference the index of
// deficit.go must reproduce).
func SetScan(p *Policy, on bool) { p.scan = on }

// CheckRoute makes p report every indexed deficit-routing choice with the scan's.
func CheckRoute(p *Policy, f func(index, scan int)) { p.checkRoute = f }
