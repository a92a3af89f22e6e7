package housetest

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/token"
	"sort"
	"testing"
)

// Limits past which a function or a file is split (docs/architecture.md).
const (
	maxComplexity = 30  // cyclomatic complexity of one function
	maxFileLines  = 600 // lines of one non-test, non-generated Go file
)

// knownOver lists the functions and files still over the limits, each
// waiting for its split (none since issue 28). The test fails when one of
// them gets under its limit, so that it leaves this list, and when
// anything else gets over.
var knownOver = map[string]bool{}

// complexity returns the cyclomatic complexity of fn as gocyclo counts
// it: one, plus one per if, for, range, non-default case or select case,
// and && or || (closures count toward the function that holds them).
func complexity(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// funcName names fn as gocyclo does: Name, or (Recv).Name, (*Recv).Name.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	star := ""
	if s, ok := typ.(*ast.StarExpr); ok {
		typ, star = s.X, "*"
	}
	switch t := typ.(type) {
	case *ast.IndexExpr: // a generic receiver
		typ = t.X
	case *ast.IndexListExpr:
		typ = t.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return "(" + star + id.Name + ")." + fn.Name.Name
	}
	return fn.Name.Name
}

// TestLimits keeps every function of non-test code at complexity 30 or
// less and every non-test, non-generated file at 600 lines or less.
func TestLimits(t *testing.T) {
	over := map[string]string{} // key: what is over, as knownOver names it
	for _, f := range moduleFiles(t) {
		if f.test || f.generated() {
			continue
		}
		if n := bytes.Count(f.src, []byte{'\n'}); n > maxFileLines {
			over[f.rel] = fmt.Sprintf("%s: %d lines, over %d", f.rel, n, maxFileLines)
		}
		for _, d := range f.file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if c := complexity(fn); c > maxComplexity {
				key := f.rel + ":" + funcName(fn)
				over[key] = fmt.Sprintf("%s (line %d): complexity %d, over %d", key, f.fset.Position(fn.Pos()).Line, c, maxComplexity)
			}
		}
	}
	var problems []string
	for key, msg := range over {
		if !knownOver[key] && !othersOver[key] {
			problems = append(problems, msg)
		}
	}
	for name, listed := range map[string]map[string]bool{"knownOver": knownOver, "othersOver": othersOver} {
		for key := range listed {
			if over[key] == "" {
				problems = append(problems, key+": within the limits now; remove it from "+name)
			}
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestComplexityCounts pins the counting rule on a small function.
func TestComplexityCounts(t *testing.T) {
	src := `package p
func f(a, b bool, xs []int, ch chan int) {
	if a && b || a { }
	for range xs { }
	for i := 0; i < 1; i++ { }
	switch { case a: ; case b: ; default: }
	select { case <-ch: ; default: }
	_ = func() { if b { } }
}`
	fset := token.NewFileSet()
	file, err := parseSource(fset, src)
	if err != nil {
		t.Fatal(err)
	}
	// 1 + if + && + || + range + for + 2 cases + 1 comm case + closure's if
	if got := complexity(file.Decls[0].(*ast.FuncDecl)); got != 10 {
		t.Errorf("complexity = %d, want 10", got)
	}
}
