package highs

import "strings"

// tailCap bounds the log kept for error messages.
const tailCap = 4096

// tailBuffer keeps the last tailCap bytes written to it, so that an abort can
// be reported with the HiGHS log lines that preceded it.
type tailBuffer struct {
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if n >= tailCap {
		p = p[n-tailCap:]
	}
	if over := len(t.buf) + len(p) - tailCap; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *tailBuffer) Reset() { t.buf = t.buf[:0] }

// Lines returns up to n of the last complete or partial lines.
func (t *tailBuffer) Lines(n int) string {
	s := strings.TrimRight(string(t.buf), "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
