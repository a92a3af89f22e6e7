// Package examples ships perflab's example files inside the binary, so
// that every example of the help and the docs runs from any folder:
// "example:NAME" names one wherever perflab reads an experiment file, and
// perflab example writes them out.
package examples

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

//go:embed *.json *.csv compare/*.txt compare/*.json compare/README.md
var files embed.FS

// Scheme prefixes an example's name where a file name is expected.
const Scheme = "example:"

// Names lists the examples by name: the file's path without its .json
// extension (sim-controls-on, compare/startup-a.txt, history.csv).
func Names() []string {
	var out []string
	fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, strings.TrimSuffix(p, ".json"))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// Read returns the example called name (with or without "example:" and
// ".json"), and its file name.
func Read(name string) (data []byte, file string, err error) {
	name = strings.TrimPrefix(name, Scheme)
	for _, f := range []string{name, name + ".json"} {
		if b, err := files.ReadFile(path.Clean(f)); err == nil {
			return b, path.Base(f), nil
		}
	}
	return nil, "", fmt.Errorf("no example %q (perflab example lists them)", name)
}

// Is reports whether name names an example rather than a file.
func Is(name string) bool { return strings.HasPrefix(name, Scheme) }

// ReadFile reads path, or the example it names ("example:NAME").
func ReadFile(path string) ([]byte, error) {
	if Is(path) {
		data, _, err := Read(path)
		return data, err
	}
	return os.ReadFile(path)
}
