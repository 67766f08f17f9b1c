package highs

// memFS is a minimal read-only file system private to one instance. It
// exists so that Highs_readModel can parse a model file (tests use it to
// check that WriteLP output reads back into HiGHS); HiGHS never sees the
// host's files.
type memFS struct {
	files map[string][]byte
	fds   map[uint32]*memFile
	next  uint32
}

type memFile struct {
	data []byte
	pos  int
}

// firstFD is the first descriptor after stdin, stdout and stderr.
const firstFD = 3

// oAccMode masks the access mode bits of open(2) flags (musl values).
const oAccMode = 3

func (fs *memFS) put(path string, data []byte) {
	if fs.files == nil {
		fs.files = make(map[string][]byte)
	}
	fs.files[path] = data
}

func (fs *memFS) remove(path string) { delete(fs.files, path) }

// open returns a new descriptor or -errno.
func (fs *memFS) open(path string, flags uint32) uint64 {
	data, ok := fs.files[path]
	switch {
	case !ok:
		return negErrno(errnoNoent)
	case flags&oAccMode != 0: // write access
		return negErrno(errnoAcces)
	}
	if fs.fds == nil {
		fs.fds = make(map[uint32]*memFile)
		fs.next = firstFD
	}
	fd := fs.next
	fs.next++
	fs.fds[fd] = &memFile{data: data}
	return uint64(fd)
}

func (fs *memFS) file(fd uint32) *memFile { return fs.fds[fd] }

func (fs *memFS) isOpen(fd uint32) bool { return fs.fds[fd] != nil }

// close returns a WASI errno.
func (fs *memFS) close(fd uint32) uint64 {
	if fs.fds[fd] == nil {
		return errnoBadf
	}
	delete(fs.fds, fd)
	return errnoSuccess
}
