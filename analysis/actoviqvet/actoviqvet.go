package actoviqvet

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/singlechecker"
)

const (
	toolPkg = "github.com/actoviq/actoviq-go/tool"
	// httptoolPkg's Client.Do sends the call's key itself.
	httptoolPkg = "github.com/actoviq/actoviq-go/tool/httptool"
	httpPkg     = "net/http"
	// ignoreMark on the reported line, or the line above it, silences a
	// report: for a key read by a helper the analyzer cannot follow.
	ignoreMark = "actoviq-vet:ignore"
)

// Analyzer reports the three mistakes described in the package doc.
var Analyzer = &analysis.Analyzer{
	Name: "actoviqvet",
	Doc: "report actoviq tools without an explicit effect, side-effect tools that never read " +
		"tool.IdempotencyKey, and HTTP requests from side-effect tools without an Idempotency-Key header",
	URL: "https://pkg.go.dev/github.com/actoviq/actoviq-go/analysis/actoviqvet",
	Run: run,
}

// Main runs [Analyzer] as a command line tool, like go vet: the body of
// cmd/actoviq-vet. It does not return.
func Main() { singlechecker.Main(Analyzer) }

// effect is what the analyzer knows of a tool's declared effect.
type effect int

const (
	effectUnknown effect = iota // not a literal the analyzer can read
	effectSideEffect
	effectOther // read or idempotent-write
)

func run(pass *analysis.Pass) (any, error) {
	funcs := map[types.Object]*ast.FuncDecl{}
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if obj := pass.TypesInfo.Defs[fd.Name]; obj != nil {
					funcs[obj] = fd
				}
			}
		}
	}
	c := &checker{pass: pass, funcs: funcs}
	for _, f := range pass.Files {
		c.file = f
		for _, d := range f.Decls { // package-level specs: var pay = tool.Spec{…}
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.VAR {
				for _, sp := range gd.Specs {
					for _, v := range sp.(*ast.ValueSpec).Values {
						c.specLiteral(v)
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				c.funcCall(call)
			}
			return true
		})
	}
	c.toolTypes()
	return nil, nil
}

type checker struct {
	pass  *analysis.Pass
	funcs map[types.Object]*ast.FuncDecl
	file  *ast.File
}

func isNamed(t types.Type, pkg, name string) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return false
	}
	return n.Obj().Pkg().Path() == pkg && n.Obj().Name() == name
}

// specLiteral reports a tool.Spec literal that defines a tool (given to
// tool.Func, returned by a Spec method, or a package-level variable)
// without an Effect field.
func (c *checker) specLiteral(e ast.Expr) {
	e = ast.Unparen(e)
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return
	}
	tv, ok := c.pass.TypesInfo.Types[lit]
	if !ok || !isNamed(tv.Type, toolPkg, "Spec") {
		return
	}
	if _, has := effectField(lit); has {
		return
	}
	if len(lit.Elts) > 0 {
		if _, keyed := lit.Elts[0].(*ast.KeyValueExpr); !keyed {
			return // positional literal: every field is given
		}
	}
	c.report(lit.Pos(), "tool.Spec without an Effect: the tool is treated as side-effect; "+
		"declare its effect (Effect: tool.Read, tool.IdempotentWrite or tool.SideEffect)")
}

func effectField(lit *ast.CompositeLit) (ast.Expr, bool) {
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Effect" {
			return kv.Value, true
		}
	}
	return nil, false
}

// specEffect reads the effect of a tool.Spec expression, when it is a
// literal with a constant (or missing) Effect.
func (c *checker) specEffect(e ast.Expr) effect {
	e = ast.Unparen(e)
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return effectUnknown
	}
	if tv, ok := c.pass.TypesInfo.Types[lit]; !ok || !isNamed(tv.Type, toolPkg, "Spec") {
		return effectUnknown
	}
	v, has := effectField(lit)
	if !has {
		return effectSideEffect // the zero value
	}
	tv := c.pass.TypesInfo.Types[v]
	if tv.Value == nil {
		return effectUnknown
	}
	n, ok := constant.Int64Val(tv.Value)
	if !ok {
		return effectUnknown
	}
	if n == 0 { // tool.SideEffect is the zero Effect
		return effectSideEffect
	}
	return effectOther
}

// funcCall checks tool.Func(spec, fn) for a side-effect spec.
func (c *checker) funcCall(call *ast.CallExpr) {
	if len(call.Args) != 2 || !c.isToolFunc(call) {
		return
	}
	c.specLiteral(call.Args[0])
	if c.specEffect(call.Args[0]) != effectSideEffect {
		return
	}
	body := c.bodyOf(call.Args[1])
	if body == nil {
		return
	}
	c.sideEffectBody(call.Args[1].Pos(), body)
}

func (c *checker) isToolFunc(call *ast.CallExpr) bool {
	fn := typeutilCallee(c.pass.TypesInfo, call)
	return fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == toolPkg && fn.Name() == "Func"
}

// bodyOf finds the body of a function literal, or of a function declared
// in this package and named by an identifier.
func (c *checker) bodyOf(e ast.Expr) *ast.BlockStmt {
	switch f := ast.Unparen(e).(type) {
	case *ast.FuncLit:
		return f.Body
	case *ast.Ident:
		if fd := c.funcs[c.pass.TypesInfo.Uses[f]]; fd != nil {
			return fd.Body
		}
	}
	return nil
}

// toolTypes checks named types of this package that implement tool.Tool
// through a Spec method returning a side-effect literal.
func (c *checker) toolTypes() {
	specs := map[types.Type]*ast.FuncDecl{}
	calls := map[types.Type]*ast.FuncDecl{}
	for _, fd := range c.funcs {
		if fd.Recv == nil || len(fd.Recv.List) != 1 {
			continue
		}
		recv := c.pass.TypesInfo.TypeOf(fd.Recv.List[0].Type)
		if p, ok := recv.(*types.Pointer); ok {
			recv = p.Elem()
		}
		switch fd.Name.Name {
		case "Spec":
			specs[recv] = fd
		case "Call":
			calls[recv] = fd
		}
	}
	for t, spec := range specs {
		call := calls[t]
		if call == nil || c.returnedEffect(spec) != effectSideEffect {
			continue
		}
		c.file = c.fileOf(call.Pos())
		c.sideEffectBody(call.Name.Pos(), call.Body)
	}
}

func (c *checker) fileOf(pos token.Pos) *ast.File {
	for _, f := range c.pass.Files {
		if f.FileStart <= pos && pos <= f.FileEnd {
			return f
		}
	}
	return c.file
}

func (c *checker) returnedEffect(fd *ast.FuncDecl) effect {
	eff := effectUnknown
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
			c.specLiteral(r.Results[0])
			if eff == effectUnknown {
				eff = c.specEffect(r.Results[0])
			}
		}
		_, lit := n.(*ast.FuncLit)
		return !lit
	})
	return eff
}

// sideEffectBody checks the body of a side-effect tool: it must read the
// idempotency key, and its HTTP requests must carry it.
func (c *checker) sideEffectBody(at token.Pos, body *ast.BlockStmt) {
	readsKey, setsHeader := false, false
	var requests, unkeyable []*ast.CallExpr
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			fn := typeutilCallee(c.pass.TypesInfo, n)
			if fn == nil || fn.Pkg() == nil {
				return true
			}
			switch path, name := fn.Pkg().Path(), fn.Name(); {
			case path == toolPkg && name == "IdempotencyKey":
				readsKey = true
			case path == httptoolPkg && name == "Do":
				// Client.Do reads the key from ctx and sets the header.
				readsKey, setsHeader = true, true
			case path == httpPkg && (name == "NewRequest" || name == "NewRequestWithContext"):
				requests = append(requests, n)
			case path == httpPkg && (name == "Post" || name == "PostForm"):
				unkeyable = append(unkeyable, n)
			case path == httpPkg && (name == "Set" || name == "Add") && len(n.Args) == 2 && c.isKeyHeader(n.Args[0]):
				setsHeader = true
			}
		case *ast.IndexExpr: // req.Header["Idempotency-Key"] = …
			if tv, ok := c.pass.TypesInfo.Types[n.X]; ok && isNamed(tv.Type, httpPkg, "Header") && c.isKeyHeader(n.Index) {
				setsHeader = true
			}
		case *ast.KeyValueExpr: // http.Header{"Idempotency-Key": …}
			if c.isKeyHeader(n.Key) {
				setsHeader = true
			}
		}
		return true
	})
	if !readsKey {
		c.report(at, "side-effect tool never reads tool.IdempotencyKey(ctx): hand the key to the system it calls "+
			"so a re-execute after a crash can be deduplicated")
	}
	if !setsHeader {
		for _, r := range requests {
			c.report(r.Pos(), "HTTP request in a side-effect tool without an Idempotency-Key header: "+
				`send it with httptool.Client.Do (package tool/httptool sets the call's key and maps timeouts, 409 and 5xx to an unknown outcome), `+
				`or set req.Header.Set("Idempotency-Key", tool.IdempotencyKey(ctx))`)
		}
	}
	for _, r := range unkeyable {
		c.report(r.Pos(), "http.Post/PostForm in a side-effect tool cannot carry an Idempotency-Key header: "+
			"use package tool/httptool (httptool.NewTool, or httptool.Client.Do on a request from http.NewRequestWithContext), "+
			"which sends the call's key and maps timeouts, 409 and 5xx to an unknown outcome instead of an error the model sees")
	}
}

func (c *checker) isKeyHeader(e ast.Expr) bool {
	tv, ok := c.pass.TypesInfo.Types[e]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return false
	}
	s, err := strconv.Unquote(tv.Value.ExactString())
	return err == nil && http.CanonicalHeaderKey(s) == "Idempotency-Key"
}

// typeutilCallee returns the function or method a call invokes, when it is
// known statically.
func typeutilCallee(info *types.Info, call *ast.CallExpr) *types.Func {
	fun := ast.Unparen(call.Fun)
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = f.X
	case *ast.IndexListExpr:
		fun = f.X
	}
	var id *ast.Ident
	switch f := fun.(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		if sel, ok := info.Selections[f]; ok {
			fn, _ := sel.Obj().(*types.Func)
			return fn
		}
		id = f.Sel
	default:
		return nil
	}
	fn, _ := info.Uses[id].(*types.Func)
	return fn
}

func (c *checker) report(pos token.Pos, msg string) {
	line := c.pass.Fset.Position(pos).Line
	for _, cg := range c.file.Comments {
		for _, cm := range cg.List {
			l := c.pass.Fset.Position(cm.Pos()).Line
			if (l == line || l == line-1) && strings.Contains(cm.Text, ignoreMark) {
				return
			}
		}
	}
	c.pass.Reportf(pos, "%s", msg)
}
