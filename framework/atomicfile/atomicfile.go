// Package atomicfile writes a whole file so that a reader sees either the
// old file or the complete new one, never half of it, and a failure leaves
// no temporary file behind: results.json, a run record's stream and
// manifest, a graph file whose plugin pins are rewritten.
//
// It imports only the standard library.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes data to path with permissions perm: into a temporary
// file in path's directory, synced, renamed over path, and the directory
// synced so that the rename itself survives a crash. A failure removes the
// temporary file and leaves path as it was.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	err = write(tmp, data, perm)
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		_ = os.Remove(name)
		return err
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// write fills f, sets its mode (CreateTemp makes it 0600), syncs and
// closes it; f is closed whatever happens.
func write(f *os.File, data []byte, perm os.FileMode) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncDir fsyncs a directory, so that the entries created or renamed in
// it are on disk.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
