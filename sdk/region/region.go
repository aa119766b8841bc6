// Package region is flowrun's shared-memory data plane. A region is a file
// under /dev/shm mapped into the host and into every plugin process that
// works on it, so bulk data (rows, gradients, index arrays) crosses process
// boundaries without being copied through gRPC or NATS. Messages and plugin
// calls carry only a Ref: the region's name, an offset and a length.
//
// Region names encode the creating process (its id and, on Linux, its
// start time), so that regions left behind by a process that died can be
// swept at the next start-up (Sweep), even when the id has been reused.
//
// This package imports nothing from flowrun; both sdk/ and framework/ use it.
package region

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Prefix starts the file name of every flowrun region.
const Prefix = "flowrun-"

// ErrNotFound means a Ref names a region that does not exist (any more).
var ErrNotFound = errors.New("region not found")

// ErrOutOfRange means a Ref reaches past the end of its region.
var ErrOutOfRange = errors.New("ref out of region bounds")

// Ref is a byte range of a named region. The zero Ref is "no data".
type Ref struct {
	Region string `json:"region"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
}

// IsZero reports whether r refers to nothing.
func (r Ref) IsZero() bool { return r.Region == "" }

// Sub returns the byte range [off, off+n) of r.
func (r Ref) Sub(off, n int64) Ref {
	return Ref{Region: r.Region, Offset: r.Offset + off, Length: n}
}

// Overlaps reports whether r and o share any byte. A kernel uses it to
// decide whether per-table work may run in parallel without changing the
// result.
func (r Ref) Overlaps(o Ref) bool {
	if r.IsZero() || o.IsZero() || r.Region != o.Region || r.Length == 0 || o.Length == 0 {
		return false
	}
	return r.Offset < o.Offset+o.Length && o.Offset < r.Offset+r.Length
}

func (r Ref) String() string {
	return fmt.Sprintf("%s[%d:%d]", r.Region, r.Offset, r.Offset+r.Length)
}

// Dir is the directory regions are created in: /dev/shm where it exists
// (memory-backed on Linux), else the temporary directory.
func Dir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// Region is a mapped shared-memory file.
type Region struct {
	name string
	path string
	// target is the file on disk a region made by CreateIn lies in (path
	// is then a symbolic link to it); empty otherwise.
	target string
	data   []byte
	owner  bool
	once   sync.Once
}

var seq atomic.Uint64

// live holds the regions this process has mapped, so that an in-process
// plugin resolving a Ref reuses the host's mapping instead of mapping again.
var live sync.Map // name -> *Region

// Create makes a new region of size bytes whose name contains label. The
// creator owns it: Close unmaps it and removes the file.
func Create(label string, size int64) (*Region, error) {
	return CreateIn("", label, size)
}

// CreateIn is Create with the region's file in dir instead of Dir(): a
// directory on disk, for data larger than memory (the disk tier), whose
// pages the OS page cache holds in memory while they are used and writes
// back and drops under memory pressure. The region keeps its name: a
// symbolic link of that name in Dir() points to the file, so Open and
// every plugin find it as any region (a Ref names no directory). An
// empty dir, or Dir() itself, is Create. Close removes the link and the
// file; Sweep removes both when their creator is gone.
func CreateIn(dir, label string, size int64) (*Region, error) {
	if size <= 0 {
		return nil, fmt.Errorf("region %q: size must be positive, got %d", label, size)
	}
	label = strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == os.PathSeparator {
			return '_'
		}
		return r
	}, label)
	name := fmt.Sprintf("%s%s-%d-%s", Prefix, owner(), seq.Add(1), label)
	path := filepath.Join(Dir(), name)
	file := path
	if dir != "" && filepath.Clean(dir) != Dir() {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("create region %s in %s: %w", name, dir, err)
		}
		file = filepath.Join(abs, name)
	}
	data, err := createFile(file, size)
	if err != nil {
		return nil, fmt.Errorf("create region %s: %w", name, err)
	}
	r := &Region{name: name, path: path, data: data, owner: true}
	if file != path {
		if err := os.Symlink(file, path); err != nil {
			unix.Munmap(data)
			os.Remove(file)
			return nil, fmt.Errorf("create region %s: link it into %s: %w", name, Dir(), err)
		}
		r.target = file
	}
	live.Store(name, r)
	return r, nil
}

// createFile makes a new file of size bytes (sparse: nothing written) and
// maps it shared.
func createFile(path string, size int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		os.Remove(path)
		return nil, err
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	return data, nil
}

// File is the path of the file that holds the region: in Dir(), or in
// the directory CreateIn named.
func (r *Region) File() string {
	if r.target != "" {
		return r.target
	}
	return r.path
}

// Open maps an existing region by name. The caller must Close it; closing a
// region it does not own only unmaps it.
func Open(name string) (*Region, error) {
	if strings.ContainsAny(name, "/\\") || !strings.HasPrefix(name, Prefix) {
		return nil, fmt.Errorf("%w: bad region name %q", ErrNotFound, name)
	}
	path := filepath.Join(Dir(), name)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
		}
		return nil, fmt.Errorf("open region: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open region %s: %w", name, err)
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("open region %s: empty file", name)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map region %s: %w", name, err)
	}
	return &Region{name: name, path: path, data: data}, nil
}

// Name is the region's name, the one a Ref carries.
func (r *Region) Name() string { return r.name }

// Size is the region's length in bytes.
func (r *Region) Size() int64 { return int64(len(r.data)) }

// Bytes is the whole mapped region.
func (r *Region) Bytes() []byte { return r.data }

// Ref is a Ref to the whole region.
func (r *Region) Ref() Ref { return Ref{Region: r.name, Length: int64(len(r.data))} }

// AdviseHugePages asks the kernel to back the region with transparent huge
// pages (madvise MADV_HUGEPAGE), which spares random row reads most of
// their TLB misses. Call it before the region is first written: pages
// already faulted in stay small until khugepaged collapses them. The advice
// takes effect only where the file system allows huge pages (a tmpfs
// mounted with huge=advise, within_size or always); elsewhere it is a
// harmless no-op. It fails with errors.ErrUnsupported off Linux.
func (r *Region) AdviseHugePages() error {
	if r.data == nil {
		return fmt.Errorf("advise huge pages: region %s is closed", r.name)
	}
	if err := adviseHugePages(r.data); err != nil {
		return fmt.Errorf("advise huge pages for region %s: %w", r.name, err)
	}
	return nil
}

// Close unmaps the region and, if this process created it, removes its file.
func (r *Region) Close() error {
	var err error
	r.once.Do(func() {
		if r.owner {
			live.Delete(r.name)
			if e := os.Remove(r.path); e != nil && !errors.Is(e, os.ErrNotExist) {
				err = e
			}
			if r.target != "" {
				if e := os.Remove(r.target); e != nil && !errors.Is(e, os.ErrNotExist) && err == nil {
					err = e
				}
			}
		}
		if e := unix.Munmap(r.data); e != nil && err == nil {
			err = e
		}
		r.data = nil
	})
	return err
}

// Mapper resolves Refs to bytes, mapping each region once and keeping it
// mapped until Close. Plugins keep one Mapper for their lifetime; it is safe
// for concurrent use.
type Mapper struct {
	mu   sync.Mutex
	open map[string]*Region
}

// Bytes returns the bytes ref names.
func (m *Mapper) Bytes(ref Ref) ([]byte, error) {
	if ref.IsZero() {
		return nil, nil
	}
	if ref.Offset < 0 || ref.Length < 0 {
		return nil, fmt.Errorf("%w: %s", ErrOutOfRange, ref)
	}
	data, err := m.region(ref.Region)
	if err != nil {
		return nil, err
	}
	if ref.Offset+ref.Length > int64(len(data)) {
		return nil, fmt.Errorf("%w: %s beyond size %d", ErrOutOfRange, ref, len(data))
	}
	return data[ref.Offset : ref.Offset+ref.Length : ref.Offset+ref.Length], nil
}

func (m *Mapper) region(name string) ([]byte, error) {
	if v, ok := live.Load(name); ok {
		if d := v.(*Region).data; d != nil {
			return d, nil
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.open[name]; ok {
		return r.data, nil
	}
	r, err := Open(name)
	if err != nil {
		return nil, err
	}
	if m.open == nil {
		m.open = make(map[string]*Region)
	}
	m.open[name] = r
	return r.data, nil
}

// Forget unmaps one region if this Mapper holds it (after its owner said it
// is gone).
func (m *Mapper) Forget(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.open[name]; ok {
		r.Close()
		delete(m.open, name)
	}
}

// Close unmaps every region the Mapper opened.
func (m *Mapper) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for name, r := range m.open {
		errs = append(errs, r.Close())
		delete(m.open, name)
	}
	return errors.Join(errs...)
}

// Sweep removes regions in dir left by processes that no longer run: no
// process has the creator's id, or it is a zombie, or (on Linux) it
// started at another time than the creator did, the id having been
// reused. It returns how many it removed.
func Sweep(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, e := range entries {
		c, ok := parseCreator(e.Name())
		if !ok || c.alive() { // this process's own regions included
			continue
		}
		path := filepath.Join(dir, e.Name())
		if e.Type()&os.ModeSymlink != 0 {
			// A region made by CreateIn: its file on disk goes too, if it
			// is a region's file.
			if target, err := os.Readlink(path); err == nil && filepath.Base(target) == e.Name() {
				os.Remove(target)
			}
		}
		if err := os.Remove(path); err == nil {
			removed++
		}
	}
	return removed, nil
}

// Float32s views b as float32s. len(b) must be a multiple of 4 and b must be
// 4-byte aligned (regions are page aligned; keep offsets multiples of 8).
func Float32s(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// Int64s views b as int64s.
func Int64s(b []byte) []int64 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*int64)(unsafe.Pointer(&b[0])), len(b)/8)
}

// Int32s views b as int32s.
func Int32s(b []byte) []int32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), len(b)/4)
}
