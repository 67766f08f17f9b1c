package cascade

// SetScan makes p route and forward by scanning every replica (the reference the index of
// deficit.go must reproduce).
func SetScan(p *Policy, on bool) { p.scan = on }

// CheckRoute makes p report every indexed deficit-routing choice with the scan's.
func CheckRoute(p *Policy, f func(index, scan int)) { p.checkRoute = f }

// GearRecords is the number of per-request gear records p keeps.
func GearRecords(p *Policy) int { return len(p.gearOf) }
