package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
)

// The cipher's tables are written down once, in ../scalar.go; the
// generator reads them from there.
var (
	blockSboxTable = func() (s [256]byte) {
		for i, v := range readTable("blockSbox") {
			s[i] = byte(v)
		}
		return s
	}()
	// streamSbox are the stream cipher S-boxes; input bit 4 is the first tap.
	streamSbox = func() (s [7][32]byte) {
		v := readTable("streamSbox")
		for i := range s {
			for j := range s[i] {
				s[i][j] = byte(v[32*i+j])
			}
		}
		return s
	}()
	// streamSboxTaps lists the five inputs of each S-box from register A,
	// first tap (input bit 4) first: {n, b} is bit b of nibble A[n].
	streamSboxTaps = func() (t [7][5][2]int) {
		v := readTable("streamSboxTaps")
		for i := range t {
			for j := range t[i] {
				t[i][j] = [2]int{v[10*i+2*j], v[10*i+2*j+1]}
			}
		}
		return t
	}()
)

// readTable returns the integers of the composite literal that initialises
// the package-level variable name in ../scalar.go, in source order.
func readTable(name string) []int {
	file, err := parser.ParseFile(token.NewFileSet(), "../scalar.go", nil, 0)
	if err != nil {
		panic(err)
	}
	obj := file.Scope.Lookup(name)
	if obj == nil {
		panic("../scalar.go has no " + name)
	}
	var out []int
	// The elements only: the literal's type holds numbers too.
	elems := &ast.CompositeLit{Elts: obj.Decl.(*ast.ValueSpec).Values[0].(*ast.CompositeLit).Elts}
	ast.Inspect(elems, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok {
			v, err := strconv.ParseInt(lit.Value, 0, 64)
			if err != nil {
				panic(err)
			}
			out = append(out, int(v))
		}
		return true
	})
	return out
}
