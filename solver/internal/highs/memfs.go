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

// read copies from the file at fd into buf and returns the byte count
// (0 at end of file or for a descriptor that is not open).
func (fs *memFS) read(fd uint32, buf []byte) int {
	f := fs.fds[fd]
	if f == nil {
		return 0
	}
	k := copy(buf, f.data[min(f.pos, len(f.data)):])
	f.pos += k
	return k
}

// seek moves the position of fd (whence: 0 SEEK_SET, 1 SEEK_CUR, 2
// SEEK_END) and returns it, or a WASI errno.
func (fs *memFS) seek(fd uint32, off int64, whence uint32) (int64, uint64) {
	f := fs.fds[fd]
	if f == nil {
		return 0, errnoBadf
	}
	var base int64
	switch whence {
	case 0:
	case 1:
		base = int64(f.pos)
	case 2:
		base = int64(len(f.data))
	default:
		return 0, errnoInval
	}
	if base+off < 0 {
		return 0, errnoInval
	}
	f.pos = int(base + off)
	return int64(f.pos), errnoSuccess
}

func (fs *memFS) isOpen(fd uint32) bool { return fs.fds[fd] != nil }

// close returns a WASI errno.
func (fs *memFS) close(fd uint32) uint64 {
	if fs.fds[fd] == nil {
		return errnoBadf
	}
	delete(fs.fds, fd)
	return errnoSuccess
}
