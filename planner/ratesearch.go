package planner

// HighestRate is the capacity search QLM's and the LLM deployers' simulators share: the
// highest rate (req/s) at which meets holds, found by doubling (or halving) from start to a
// bracket, no higher than maxRate and no lower than minRate, then bisecting until the
// bracket's top is within ratio of its bottom (ratio 1.03: to 3%). It returns 0 when meets
// fails even at minRate; the first error from meets stops the search. meets is assumed
// monotone: it holds at every rate below one where it holds.
func HighestRate(start, minRate, maxRate, ratio float64, meets func(rate float64) (bool, error)) (float64, error) {
	lo, hi := 0.0, 0.0 // the highest rate known to meet, the lowest known to fail (0: none yet)
	probe := func(rate float64) error {
		ok, err := meets(rate)
		switch {
		case err != nil:
			return err
		case ok:
			lo = rate
		default:
			hi = rate
		}
		return nil
	}
	rate := start
	if err := probe(rate); err != nil {
		return 0, err
	}
	// Bracket: double while meets holds, or halve while it fails.
	up := lo > 0
	for (up && hi == 0 && rate < maxRate) || (!up && lo == 0 && rate > minRate) {
		if up {
			rate *= 2
		} else {
			rate /= 2
		}
		if err := probe(rate); err != nil {
			return 0, err
		}
	}
	if up && hi == 0 {
		hi = lo
	}
	for lo > 0 && hi > lo*ratio {
		if err := probe((lo + hi) / 2); err != nil {
			return 0, err
		}
	}
	return lo, nil
}
