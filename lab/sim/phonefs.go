package sim

import (
	"io/fs"
	"path"
	"sort"
	"strings"
)

// The phone's file system as its shell sees it: kernel files (generated
// from the model), regular files, directories and tmpfs mounts.

// resolve cleans p and replaces a linked prefix (ph.links: cpufreq
// policies, kgsl) with its target.
func (ph *Phone) resolve(p string) string {
	p = clean(p)
	for l, t := range ph.links {
		if p == l || strings.HasPrefix(p, l+"/") {
			return t + p[len(l):]
		}
	}
	return p
}

func isKernelPath(p string) bool {
	return p == "/sys" || strings.HasPrefix(p, "/sys/") || p == "/proc" || strings.HasPrefix(p, "/proc/")
}

// ReadFile reads a file: kernel files (/sys, /proc) are generated from the
// model, others come from the in-memory file system.
func (ph *Phone) ReadFile(name string) ([]byte, error) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	p := ph.resolve(name)
	if v, ok := ph.sys[p]; ok && v.present() {
		return []byte(v.read()), nil
	}
	if isKernelPath(p) {
		if ph.sysDirExists(p) {
			return nil, pathErr("read", name, errIsDir)
		}
		return nil, pathErr("open", name, fs.ErrNotExist)
	}
	n, err := ph.fs.lookup(p)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	if n.dir {
		return nil, pathErr("read", name, errIsDir)
	}
	return append([]byte(nil), n.data...), nil
}

// WriteFile writes data to a file, as `echo data > name` does as root.
// Kernel files parse the value as the kernel would and fail with EINVAL
// on bad input; regular files are created or truncated.
func (ph *Phone) WriteFile(name string, data []byte) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	p := ph.resolve(name)
	if v, ok := ph.sys[p]; ok && v.present() {
		if v.write == nil {
			return pathErr("write", name, fs.ErrPermission)
		}
		if err := v.write(strings.TrimSpace(string(data))); err != nil {
			return pathErr("write", name, err)
		}
		return nil
	}
	if isKernelPath(p) {
		return pathErr("open", name, fs.ErrNotExist)
	}
	return ph.writeRegular(p, name, data, false)
}

// AppendFile appends data to a regular file (`echo data >> name`).
func (ph *Phone) AppendFile(name string, data []byte) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	p := ph.resolve(name)
	if _, ok := ph.sys[p]; ok || isKernelPath(p) {
		return pathErr("open", name, fs.ErrPermission)
	}
	return ph.writeRegular(p, name, data, true)
}

func (ph *Phone) writeRegular(p, name string, data []byte, appendTo bool) error {
	d, base, err := ph.fs.parent(p)
	if err != nil {
		return pathErr("open", name, err)
	}
	n, ok := d.children[base]
	if !ok {
		n = &node{mode: 0o660}
		d.children[base] = n
	}
	if n.dir {
		return pathErr("open", name, errIsDir)
	}
	if appendTo {
		n.data = append(n.data, data...)
	} else {
		n.data = append([]byte(nil), data...)
	}
	n.mtime = ph.now()
	return nil
}

func (ph *Phone) sysDirExists(p string) bool {
	if p == "/sys" || p == "/proc" {
		return true
	}
	pre := p + "/"
	for k := range ph.sys {
		if strings.HasPrefix(k, pre) {
			return true
		}
	}
	for l := range ph.links {
		if l == p || strings.HasPrefix(l, pre) {
			return true
		}
	}
	return false
}

// Stat describes a file or directory.
func (ph *Phone) Stat(name string) (FileInfo, error) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	p := ph.resolve(name)
	if v, ok := ph.sys[p]; ok && v.present() {
		return FileInfo{Name: path.Base(p), Size: 4096, Mode: v.mode, ModTime: ph.now()}, nil
	}
	if isKernelPath(p) {
		if ph.sysDirExists(p) {
			return FileInfo{Name: path.Base(p), Dir: true, Mode: fs.ModeDir | 0o755, ModTime: ph.bootEpoch}, nil
		}
		return FileInfo{}, pathErr("stat", name, fs.ErrNotExist)
	}
	n, err := ph.fs.lookup(p)
	if err != nil {
		return FileInfo{}, pathErr("stat", name, err)
	}
	return FileInfo{Name: path.Base(p), Dir: n.dir, Size: n.size(), Mode: n.mode, ModTime: n.mtime}, nil
}

// ReadDir lists a directory, sorted by name.
func (ph *Phone) ReadDir(name string) ([]FileInfo, error) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	p := ph.resolve(name)
	var out []FileInfo
	if isKernelPath(p) {
		seen := map[string]bool{}
		pre := strings.TrimSuffix(p, "/") + "/"
		add := func(k string, file bool, mode fs.FileMode) {
			rest := strings.TrimPrefix(k, pre)
			first, more, _ := strings.Cut(rest, "/")
			if first == "" || seen[first] {
				return
			}
			seen[first] = true
			if more != "" || !file {
				out = append(out, FileInfo{Name: first, Dir: true, Mode: fs.ModeDir | 0o755, ModTime: ph.bootEpoch})
			} else {
				out = append(out, FileInfo{Name: first, Size: 4096, Mode: mode, ModTime: ph.now()})
			}
		}
		for k, v := range ph.sys {
			if strings.HasPrefix(k, pre) && v.present() {
				add(k, true, v.mode)
			}
		}
		for l := range ph.links {
			if strings.HasPrefix(l, pre) {
				add(l, false, 0)
			}
		}
		if len(out) == 0 && !ph.sysDirExists(p) {
			return nil, pathErr("open", name, fs.ErrNotExist)
		}
	} else {
		n, err := ph.fs.lookup(p)
		if err != nil {
			return nil, pathErr("open", name, err)
		}
		if !n.dir {
			return nil, pathErr("readdir", name, errNotDir)
		}
		for k, c := range n.children {
			out = append(out, FileInfo{Name: k, Dir: c.dir, Size: c.size(), Mode: c.mode, ModTime: c.mtime})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// MkdirAll creates a directory and its parents (`mkdir -p`).
func (ph *Phone) MkdirAll(name string) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	p := ph.resolve(name)
	if isKernelPath(p) {
		return pathErr("mkdir", name, fs.ErrPermission)
	}
	if err := ph.fs.mkdirAll(p, ph.now()); err != nil {
		return pathErr("mkdir", name, err)
	}
	return nil
}

// RemoveAll removes a file or tree (`rm -rf`); a missing path is not an
// error. Mount points cannot be removed.
func (ph *Phone) RemoveAll(name string) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.removeAll(name)
}

func (ph *Phone) removeAll(name string) error {
	p := ph.resolve(name)
	if isKernelPath(p) {
		return pathErr("unlink", name, fs.ErrPermission)
	}
	if _, ok := ph.fs.mounts[p]; ok {
		// rm -rf on a mount point empties it but cannot remove it.
		n, _ := ph.fs.lookup(p)
		n.children = map[string]*node{}
		return pathErr("rmdir", name, errBusy)
	}
	d, base, err := ph.fs.parent(p)
	if err != nil {
		if isNotExist(err) {
			return nil
		}
		return pathErr("unlink", name, err)
	}
	delete(d.children, base)
	return nil
}

// Copy copies a file or tree from src to exactly dst, preserving modes and
// times (`cp -a src dst` when dst does not exist). An existing dst
// directory is replaced, except a mount point, whose contents are replaced.
func (ph *Phone) Copy(src, dst string) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.copyTree(src, dst)
}

func (ph *Phone) copyTree(src, dst string) error {
	s, d := ph.resolve(src), ph.resolve(dst)
	if isKernelPath(s) || isKernelPath(d) {
		return pathErr("cp", dst, fs.ErrPermission)
	}
	n, err := ph.fs.lookup(s)
	if err != nil {
		return pathErr("cp", src, err)
	}
	if d == s || strings.HasPrefix(d, s+"/") {
		return pathErr("cp", dst, errInvalid)
	}
	c := n.clone()
	if _, ok := ph.fs.mounts[d]; ok && c.dir {
		m, _ := ph.fs.lookup(d)
		m.children = c.children
		return nil
	}
	parent, base, err := ph.fs.parent(d)
	if err != nil {
		return pathErr("cp", dst, err)
	}
	parent.children[base] = c
	return nil
}

// Chmod changes a regular file's permission bits; kernel files keep theirs
// (the phone's shell runs as root, so modes do not gate writes).
func (ph *Phone) Chmod(name string, mode fs.FileMode) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	p := ph.resolve(name)
	if v, ok := ph.sys[p]; ok {
		v.mode = mode.Perm()
		return nil
	}
	n, err := ph.fs.lookup(p)
	if err != nil {
		return pathErr("chmod", name, err)
	}
	n.mode = n.mode&fs.ModeType | mode.Perm()
	return nil
}

// MountTmpfs mounts an empty tmpfs over the directory target, hiding its
// contents until Unmount (`mount -t tmpfs tmpfs TARGET`).
func (ph *Phone) MountTmpfs(target string) error { return ph.MountTmpfsFrom("tmpfs", target) }

// MountTmpfsFrom is MountTmpfs with the mount's source, which Mounts
// reports (`mount -t tmpfs SOURCE TARGET`).
func (ph *Phone) MountTmpfsFrom(source, target string) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	p := ph.resolve(target)
	if err := ph.fs.mount(p, ph.now()); err != nil {
		return pathErr("mount", target, err)
	}
	ph.fs.sources[p] = source
	return nil
}

// Unmount removes a tmpfs mount (`umount TARGET`); its contents are lost.
func (ph *Phone) Unmount(target string) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if err := ph.fs.unmount(ph.resolve(target)); err != nil {
		return pathErr("umount", target, err)
	}
	return nil
}

// Mounts lists the tmpfs mounts.
func (ph *Phone) Mounts() []Mount {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.fs.mountList()
}
