package local

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// snapshot copies dir once, the first time it is asked for, and returns the
// copy's path. Later calls return the same copy.
func (d *Device) snapshot(dir string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if snap, ok := d.snapshots[dir]; ok {
		return snap, nil
	}
	if err := checkStateDir(dir); err != nil {
		return "", err
	}
	if d.tmp == "" {
		return "", fmt.Errorf("controls.state_dir: device not set up")
	}
	snap := filepath.Join(d.tmp, fmt.Sprintf("state-%d", len(d.snapshots)))
	if err := copyTree(dir, snap); err != nil {
		os.RemoveAll(snap)
		return "", fmt.Errorf("snapshot of state_dir %s: %w", dir, err)
	}
	d.snapshots[dir] = snap
	return snap, nil
}

// checkStateDir says whether controls.state_dir names a directory.
func checkStateDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("controls.state_dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("controls.state_dir: %s is not a directory", dir)
	}
	return nil
}

// restoreDir makes dir's contents equal to snap's: everything in dir is
// removed, then snap is copied in. dir itself is kept (its inode, mode).
func restoreDir(snap, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if os.IsNotExist(err) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	src, err := os.ReadDir(snap)
	if err != nil {
		return err
	}
	for _, e := range src {
		if err := copyTree(filepath.Join(snap, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies src to dst, keeping modes, symlinks and modification times.
func copyTree(src, dst string) error {
	err := filepath.WalkDir(src, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := de.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			return os.MkdirAll(target, mode.Perm()|0o700)
		case mode&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case mode.IsRegular():
			return copyFile(path, target, info)
		default:
			return fmt.Errorf("%s: cannot snapshot %v files", path, mode.Type())
		}
	})
	if err != nil {
		return err
	}
	// Directory times last, after their contents were written.
	return filepath.WalkDir(src, func(path string, de fs.DirEntry, err error) error {
		if err != nil || !de.IsDir() {
			return err
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if err := os.Chmod(target, info.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(target, atime(info), info.ModTime())
	})
}

func copyFile(src, dst string, info fs.FileInfo) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chtimes(dst, atime(info), info.ModTime())
}

func atime(info fs.FileInfo) time.Time {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Atim.Sec, st.Atim.Nsec)
	}
	return info.ModTime()
}
