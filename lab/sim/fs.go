package sim

import (
	"errors"
	"io/fs"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"
)

// FileInfo describes a file of the simulated phone.
type FileInfo struct {
	Name    string      `json:"name"`
	Dir     bool        `json:"dir"`
	Size    int64       `json:"size"`
	Mode    fs.FileMode `json:"mode"`
	ModTime time.Time   `json:"mod_time"`
}

// Mount is one mounted file system.
type Mount struct {
	Source string `json:"source,omitempty"` // as given to mount; "tmpfs" by default
	Target string `json:"target"`
	Type   string `json:"type"` // "tmpfs"
}

// node is a regular file or directory of the in-memory file system that
// backs /data, /sdcard and friends.
type node struct {
	dir      bool
	children map[string]*node
	data     []byte
	mode     fs.FileMode
	mtime    time.Time
}

func newDir(mode fs.FileMode, t time.Time) *node {
	return &node{dir: true, children: map[string]*node{}, mode: mode | fs.ModeDir, mtime: t}
}

func (n *node) clone() *node {
	c := &node{dir: n.dir, mode: n.mode, mtime: n.mtime}
	if n.dir {
		c.children = make(map[string]*node, len(n.children))
		for k, v := range n.children {
			c.children[k] = v.clone()
		}
	} else {
		c.data = append([]byte(nil), n.data...)
	}
	return c
}

func (n *node) size() int64 {
	if !n.dir {
		return int64(len(n.data))
	}
	var s int64
	for _, c := range n.children {
		s += c.size()
	}
	return s
}

// vfile is a kernel file (sysfs, procfs): reads and writes call the model.
type vfile struct {
	read   func() string
	write  func(string) error // nil: read-only
	mode   fs.FileMode
	exists func() bool // nil: always; false hides the file (an offline CPU's cpufreq)
}

func (v *vfile) present() bool { return v.exists == nil || v.exists() }

func pathErr(op, p string, err error) error { return &fs.PathError{Op: op, Path: p, Err: err} }

// errNotDir etc. mirror what a kernel returns.
var (
	errInvalid = syscall.EINVAL
	errNotDir  = syscall.ENOTDIR
	errIsDir   = syscall.EISDIR
	errBusy    = syscall.EBUSY
)

func clean(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return path.Clean(p)
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// memFS is the writable part of the phone's file system plus its tmpfs mounts.
type memFS struct {
	root    *node
	mounts  map[string]*node  // mount point → the directory it hides
	sources map[string]string // mount point → the mount's source
}

func (m *memFS) lookup(p string) (*node, error) {
	n := m.root
	for _, part := range splitPath(p) {
		if !n.dir {
			return nil, errNotDir
		}
		c, ok := n.children[part]
		if !ok {
			return nil, fs.ErrNotExist
		}
		n = c
	}
	return n, nil
}

func (m *memFS) parent(p string) (*node, string, error) {
	dir, base := path.Split(p)
	if base == "" {
		return nil, "", errInvalid
	}
	d, err := m.lookup(dir)
	if err != nil {
		return nil, "", err
	}
	if !d.dir {
		return nil, "", errNotDir
	}
	return d, base, nil
}

func (m *memFS) mkdirAll(p string, t time.Time) error {
	n := m.root
	for _, part := range splitPath(p) {
		c, ok := n.children[part]
		if !ok {
			c = newDir(0o771, t)
			n.children[part] = c
		} else if !c.dir {
			return errNotDir
		}
		n = c
	}
	return nil
}

// fsType names the file system holding p: "tmpfs" under a tmpfs mount,
// else "ext4".
func (m *memFS) fsType(p string) string {
	for q := p; ; q = path.Dir(q) {
		if _, ok := m.mounts[q]; ok {
			return "tmpfs"
		}
		if q == "/" {
			return "ext4"
		}
	}
}

func (m *memFS) mount(target string, t time.Time) error {
	if _, ok := m.mounts[target]; ok {
		return errBusy
	}
	d, base, err := m.parent(target)
	if err != nil {
		return err
	}
	old, ok := d.children[base]
	if !ok {
		return fs.ErrNotExist
	}
	if !old.dir {
		return errNotDir
	}
	m.mounts[target] = old
	d.children[base] = newDir(old.mode.Perm(), t)
	return nil
}

func (m *memFS) unmount(target string) error {
	old, ok := m.mounts[target]
	if !ok {
		return errInvalid
	}
	d, base, err := m.parent(target)
	if err != nil {
		return err
	}
	d.children[base] = old
	delete(m.mounts, target)
	delete(m.sources, target)
	return nil
}

func (m *memFS) mountList() []Mount {
	var out []Mount
	for t := range m.mounts {
		src := m.sources[t]
		if src == "" {
			src = "tmpfs"
		}
		out = append(out, Mount{Source: src, Target: t, Type: "tmpfs"})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
