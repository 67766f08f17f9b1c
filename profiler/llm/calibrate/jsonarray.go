package calibrate

import (
	"bytes"
	"errors"
	"math"
	"strconv"
)

// The per-request arrays of a run are read into compact lists, not one value per entry: a
// run of 10,000 requests of 200 tokens holds two million inter-token gaps, and a num (its
// text kept for errors) per gap would take tens of bytes each. A list keeps float64s, the
// text of the few entries that are not plain numbers (what an error names), and stops storing
// at MaxRequests entries (the reader then refuses the run by name), so what a file costs is
// bounded by the cap, not by the file.

// MaxRequests bounds the requests of one run (every per-request array's length): the fit
// replays the whole run a few hundred times, so a bigger run is refused by name; calibrate on
// a sample of it.
const MaxRequests = 100_000

// MaxBytes bounds a run's file: a run of MaxRequests requests of a few hundred output tokens
// each is well under it.
const MaxBytes = 256 << 20

// numList is a JSON array of numbers as Python's json module writes one (NaN and Infinity
// quoted by pythonLiterals first). given is false for null (or a key not there).
type numList struct {
	v     []float64
	odd   map[int]num // entries that are not plain finite numbers, as written
	n     int         // entries read (more than len(v) once past MaxRequests)
	given bool
}

func (l *numList) UnmarshalJSON(b []byte) error {
	*l = numList{}
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	l.given = true
	return eachEntry(b, func(raw []byte) error {
		i := l.n
		l.n++
		if i >= MaxRequests {
			return errStop
		}
		x, plain := parseNum(raw)
		if !plain {
			if l.odd == nil {
				l.odd = map[int]num{}
			}
			l.odd[i] = x
		}
		l.v = append(l.v, x.v)
		return nil
	})
}

func (l *numList) len() int { return l.n }

// at is entry i as a num (its text for an error: as written for an odd entry, the shortest
// decimal of the value otherwise).
func (l *numList) at(i int) num {
	if x, ok := l.odd[i]; ok {
		return x
	}
	return plainNum(l.v[i])
}

func plainNum(v float64) num {
	f := byte('g')
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		f = 'f'
	}
	return num{v: v, raw: strconv.FormatFloat(v, f, -1, 64)}
}

// itlRow is what the calibration reads of one request's inter-token gaps: how many, their
// sum and the longest; bad is its first entry that is not a time in [0, maxSeconds] (col −1:
// none).
type itlRow struct {
	n        int
	sum, max float64
	badCol   int
	bad      num
}

// itlTable is the itls array: one row per request.
type itlTable struct {
	rows []itlRow
	n    int
}

func (t *itlTable) UnmarshalJSON(b []byte) error {
	*t = itlTable{}
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	return eachEntry(b, func(raw []byte) error {
		i := t.n
		t.n++
		if i >= MaxRequests {
			return errStop
		}
		r := itlRow{badCol: -1}
		if string(raw) != "null" {
			if len(raw) == 0 || raw[0] != '[' {
				r.badCol, r.bad = 0, oddNum(raw)
			} else if err := eachEntry(raw, func(e []byte) error {
				x, plain := parseNum(e)
				if r.badCol < 0 && (x.null || !(x.v >= 0 && x.v <= maxSeconds)) {
					if plain {
						x = plainNum(x.v)
					}
					r.badCol, r.bad = r.n, x
				}
				r.n++
				r.sum += x.v
				r.max = max(r.max, x.v)
				return nil
			}); err != nil {
				return err
			}
		}
		t.rows = append(t.rows, r)
		return nil
	})
}

// errorList is the errors array: which requests failed (a non-empty string). given is
// false for null (or a key not there).
type errorList struct {
	failed []bool
	n      int
	given  bool
}

func (l *errorList) UnmarshalJSON(b []byte) error {
	*l = errorList{}
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	l.given = true
	return eachEntry(b, func(raw []byte) error {
		l.n++
		if l.n > MaxRequests {
			return errStop
		}
		// vLLM writes "" for a request that succeeded; null is read as none either.
		l.failed = append(l.failed, string(raw) != `""` && string(raw) != "null")
		return nil
	})
}

// errStop ends eachEntry early, without an error: the list has counted past its cap.
var errStop = errors.New("stop")

// eachEntry calls f with the text of each entry of the JSON array b (already valid JSON:
// the decoder checked it), in order; an entry that is not an array is a bad value for f
// to name.
func eachEntry(b []byte, f func(raw []byte) error) error {
	if len(b) == 0 || b[0] != '[' {
		return errors.New("must be an array")
	}
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == ']' {
		return nil
	}
	for i < len(b) {
		j := valueEnd(b, i)
		if err := f(b[i:j]); err != nil {
			if err == errStop {
				return nil
			}
			return err
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] == ']' {
			return nil
		}
		i = skipSpace(b, i+1) // the comma
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd is the end of the JSON value starting at b[i].
func valueEnd(b []byte, i int) int {
	depth, inStr := 0, false
	for j := i; j < len(b); j++ {
		c := b[j]
		if inStr {
			switch c {
			case '\\':
				j++
			case '"':
				inStr = false
				if depth == 0 {
					return j + 1
				}
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '[', '{':
			depth++
		case ']', '}':
			if depth == 0 {
				return j
			}
			depth--
			if depth == 0 {
				return j + 1
			}
		case ',', ' ', '\n', '\t', '\r':
			if depth == 0 {
				return j
			}
		}
	}
	return len(b)
}

// parseNum reads one entry: plain is true for a finite JSON number, which needs no text kept.
func parseNum(raw []byte) (num, bool) {
	if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		if v, err := strconv.ParseFloat(string(raw), 64); err == nil {
			return num{v: v}, true
		}
	}
	return oddNum(raw), false
}

// oddNum is an entry that is not a plain finite number, read as num reads one.
func oddNum(raw []byte) num {
	var x num
	if err := x.UnmarshalJSON(raw); err != nil {
		x = num{v: math.NaN(), raw: string(raw), quoted: true}
	}
	return x
}
