package gateway

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxParams is the most parameters a function of the package takes: a
// request's decisions travel as one call value, not as a row of
// positional arguments.
const maxParams = 6

// TestNoFunctionTakesMoreThanSixParameters parses the package's source
// (not its tests) and names every function, method or function literal
// with more than maxParams parameters.
func TestNoFunctionTakesMoreThanSixParameters(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var wide []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			var ft *ast.FuncType
			what := "a function literal"
			switch x := n.(type) {
			case *ast.FuncDecl:
				ft, what = x.Type, x.Name.Name
			case *ast.FuncLit:
				ft = x.Type
			default:
				return true
			}
			if n := countParams(ft); n > maxParams {
				wide = append(wide, fset.Position(ft.Pos()).String()+": "+what+" takes "+strconv.Itoa(n))
			}
			return true
		})
	}
	require.Empty(t, wide, "functions with more than %d parameters", maxParams)
}

func countParams(ft *ast.FuncType) int {
	n := 0
	for _, f := range ft.Params.List {
		n += max(len(f.Names), 1)
	}
	return n
}
