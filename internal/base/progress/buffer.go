package progress

import (
	"bytes"
	"sync"
)

// Buffer is an in-memory writer that says whether it is a terminal (Terminal): a command's
// test gives it as the error stream to see the progress a user at a terminal (TTY true) or a
// pipe (false) would see, without a pty and without timing. Safe for concurrent writes.
type Buffer struct {
	TTY bool
	mu  sync.Mutex
	buf bytes.Buffer
}

// IsTerminal implements Terminal.
func (b *Buffer) IsTerminal() bool { return b.TTY }

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
