package shell

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/perflab/perflab/lab/sim"
)

// File-system errors, worded as toybox prints them.
var (
	ErrNotExist   = errors.New("No such file or directory")
	ErrIsDir      = errors.New("Is a directory")
	ErrNotDir     = errors.New("Not a directory")
	ErrPermission = errors.New("Permission denied")
)

// Unix file type bits as adb's sync protocol reports them.
const (
	ModeDir uint32 = 0o040000
	ModeReg uint32 = 0o100000
)

// Info describes one file.
type Info struct {
	Name  string
	Mode  uint32 // type bits | permission bits
	Size  int64
	Mtime time.Time
}

// Mount is one mounted file system as `mount` prints it.
type Mount struct {
	Source, Target, Type, Options string
}

// files applies the shell user's permissions to the phone's file system:
// the shell user (uid 2000) may write only under /data/local/tmp and
// /sdcard; root may write anywhere the phone allows.
type files struct {
	sys System
}

func errText(err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ErrNotExist
	case errors.Is(err, fs.ErrPermission):
		return ErrPermission
	case errors.Is(err, syscall.EISDIR):
		return ErrIsDir
	case errors.Is(err, syscall.ENOTDIR):
		return ErrNotDir
	}
	s := err.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return errors.New(s)
}

func shellWritable(p string) bool {
	for _, d := range []string{"/data/local/tmp", "/sdcard"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

func toInfo(fi sim.FileInfo) Info {
	m := uint32(fi.Mode.Perm())
	if fi.Dir {
		m |= ModeDir
	} else {
		m |= ModeReg
	}
	return Info{Name: fi.Name, Mode: m, Size: fi.Size, Mtime: fi.ModTime}
}

func (f files) Stat(p string) (Info, error) {
	fi, err := f.sys.Stat(p)
	if err != nil {
		return Info{}, errText(err)
	}
	return toInfo(fi), nil
}

func (f files) ReadFile(p string) ([]byte, error) {
	b, err := f.sys.ReadFile(p)
	return b, errText(err)
}

func (f files) WriteFile(p string, data []byte, mode uint32, uid int, appendTo bool) error {
	if uid != 0 && !shellWritable(p) {
		return ErrPermission
	}
	_, statErr := f.sys.Stat(p)
	var err error
	if appendTo {
		err = f.sys.AppendFile(p, data)
	} else {
		err = f.sys.WriteFile(p, data)
	}
	if err == nil && statErr != nil && !isKernelPath(p) {
		err = f.sys.Chmod(p, fs.FileMode(mode&0o777))
	}
	return errText(err)
}

func (f files) MkdirAll(p string, mode uint32, uid int) error {
	if uid != 0 && !shellWritable(p) {
		return ErrPermission
	}
	return errText(f.sys.MkdirAll(p))
}

func (f files) Mkdir(p string, mode uint32, uid int) error {
	if _, err := f.sys.Stat(p); err == nil {
		return errors.New("File exists")
	}
	if _, err := f.sys.Stat(path.Dir(p)); err != nil {
		return errText(err)
	}
	return f.MkdirAll(p, mode, uid)
}

func (f files) Chmod(p string, perm uint32, uid int) error {
	if uid != 0 && !shellWritable(p) {
		return errors.New("Operation not permitted")
	}
	return errText(f.sys.Chmod(p, fs.FileMode(perm&0o777)))
}

func (f files) Remove(p string, recursive bool, uid int) error {
	fi, err := f.sys.Stat(p)
	if err != nil {
		return errText(err)
	}
	if fi.Dir && !recursive {
		return ErrIsDir
	}
	if uid != 0 && !shellWritable(p) {
		return ErrPermission
	}
	return errText(f.sys.RemoveAll(p))
}

func (f files) Copy(src, dst string, recursive bool, uid int) error {
	fi, err := f.sys.Stat(src)
	if err != nil {
		return errors.New(src + ": " + errText(err).Error())
	}
	if fi.Dir && !recursive {
		return errors.New(src + ": " + ErrIsDir.Error())
	}
	if di, err := f.sys.Stat(dst); err == nil && di.Dir && !f.isMount(dst) {
		dst = path.Join(dst, path.Base(src))
	}
	if uid != 0 && !shellWritable(dst) {
		return errors.New(dst + ": " + ErrPermission.Error())
	}
	if err := f.sys.Copy(src, dst); err != nil {
		return errors.New(dst + ": " + errText(err).Error())
	}
	return nil
}

func (f files) Rename(src, dst string, uid int) error {
	if err := f.Copy(src, dst, true, uid); err != nil {
		return err
	}
	return f.Remove(src, true, uid)
}

func (f files) ReadDir(p string) ([]Info, error) {
	ents, err := f.sys.ReadDir(p)
	if err != nil {
		return nil, errText(err)
	}
	out := make([]Info, len(ents))
	for i, e := range ents {
		out[i] = toInfo(e)
	}
	return out, nil
}

func (f files) Size(p string) int64 {
	fi, err := f.sys.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size
}

func (f files) isMount(p string) bool {
	for _, m := range f.sys.Mounts() {
		if m.Target == path.Clean(p) {
			return true
		}
	}
	return false
}

func (f files) IsTmpfs(p string) bool {
	p = path.Clean(p)
	for _, m := range f.sys.Mounts() {
		if m.Type == "tmpfs" && (p == m.Target || strings.HasPrefix(p, m.Target+"/")) {
			return true
		}
	}
	return false
}

func (f files) MountTmpfs(source, target, options string) error {
	return errText(f.sys.MountTmpfsFrom(source, target))
}

func (f files) Unmount(target string) error {
	return errText(f.sys.Unmount(target))
}

// Mounts lists the phone's fixed mounts followed by its tmpfs mounts.
func (f files) Mounts() []Mount {
	out := []Mount{
		{"/dev/block/dm-0", "/", "ext4", "ro,seclabel,relatime"},
		{"/dev/block/sda13", "/data", "f2fs", "rw,lazytime,seclabel,nosuid,nodev,noatime"},
		{"proc", "/proc", "proc", "rw,relatime"},
		{"sysfs", "/sys", "sysfs", "rw,seclabel,relatime"},
	}
	for _, m := range f.sys.Mounts() {
		out = append(out, Mount{m.Source, m.Target, m.Type, "rw,seclabel,relatime"})
	}
	return out
}

// Clean makes p absolute relative to cwd and removes dot segments.
func Clean(cwd, p string) string {
	if !strings.HasPrefix(p, "/") {
		p = cwd + "/" + p
	}
	return path.Clean(p)
}
