package planner

// HighestRate is the capacity search QLM's and the LLM deployers' simulators share: the
// highest rate (req/s) at which meets holds, found by doubling (or halving) from start to a
// bracket, no higher than maxRate and no lower than minRate, then bisecting until the
// bracket's top is within ratio of its bottom (ratio 1.03: to 3%). It returns 0 when meets
// fails even at minRate; the first error from meets stops the search. meets is assumed
// monotone: it holds at every rate below one where it holds.
func HighestRate(start, minRate, maxRate, ratio float64, meets func(rate float64) (bool, error)) (float64, error) {
	lo, hi, rate := 0.0, 0.0, start
	ok, err := meets(rate)
	if err != nil {
		return 0, err
	}
	if ok {
		lo = rate
		for hi == 0 && rate < maxRate {
			rate *= 2
			if ok, err = meets(rate); err != nil {
				return 0, err
			} else if ok {
				lo = rate
			} else {
				hi = rate
			}
		}
		if hi == 0 {
			hi = lo
		}
	} else {
		hi = rate
		for lo == 0 && rate > minRate {
			rate /= 2
			if ok, err = meets(rate); err != nil {
				return 0, err
			} else if ok {
				lo = rate
			} else {
				hi = rate
			}
		}
	}
	for lo > 0 && hi > lo*ratio {
		mid := (lo + hi) / 2
		if ok, err = meets(mid); err != nil {
			return 0, err
		} else if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}
