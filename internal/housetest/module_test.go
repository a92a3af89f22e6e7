package housetest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// modulePath is the module's import path (go.mod).
const modulePath = "github.com/perflab/perflab"

// sourceFile is one parsed Go file of the module.
type sourceFile struct {
	rel  string // slash path from the module root
	pkg  string // the directory's path from the module root ("" for the root)
	test bool   // a _test.go file
	fset *token.FileSet
	file *ast.File
	src  []byte
}

// moduleFiles parses every Go file of the module (comments kept, for the
// generated-code marker), skipping testdata and hidden directories.
func moduleFiles(t *testing.T) []sourceFile {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	var files []sourceFile
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		dir := path.Dir(rel)
		if dir == "." {
			dir = ""
		}
		files = append(files, sourceFile{rel: rel, pkg: dir, test: strings.HasSuffix(name, "_test.go"), fset: fset, file: f, src: src})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found only %d Go files under %s", len(files), root)
	}
	return files
}

// imports returns the import paths of f.
func (f sourceFile) imports() []string {
	var out []string
	for _, spec := range f.file.Imports {
		p, err := strconv.Unquote(spec.Path.Value)
		if err == nil {
			out = append(out, p)
		}
	}
	return out
}

// generated reports whether f carries Go's generated-code marker.
func (f sourceFile) generated() bool {
	return ast.IsGenerated(f.file)
}

// parseSource parses one file's source text.
func parseSource(fset *token.FileSet, src string) (*ast.File, error) {
	return parser.ParseFile(fset, "src.go", src, parser.ParseComments)
}
