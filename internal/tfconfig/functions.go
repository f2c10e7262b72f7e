package tfconfig

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// Bounds of static evaluation: the configuration is outside input, and a
// few bytes of expressions must not make gigabytes of values.
const (
	// maxValueSize bounds one value: a variable's, a local's, an
	// expression's, a function's arguments and result.
	maxValueSize = 64 << 10
	// maxEvalBytes bounds what the functions of one module call's
	// source and version produce together.
	maxEvalBytes = 1 << 20
	// maxEvalDepth bounds how deep locals and module arguments refer to
	// one another.
	maxEvalDepth = 64
	// maxReferences bounds the references of one expression.
	maxReferences = 256
)

// staticFunctionImpls are the functions static evaluation offers: those of
// OpenTofu's built-in functions whose results grow at most with their
// arguments (so not range, chunklist, setproduct, indent or formatlist),
// and none that reads files or the clock. Another function is refused
// with an error that names it.
var staticFunctionImpls = map[string]function.Function{
	"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "floor": stdlib.FloorFunc,
	"max": stdlib.MaxFunc, "min": stdlib.MinFunc, "parseint": stdlib.ParseIntFunc, "signum": stdlib.SignumFunc,
	"chomp": stdlib.ChompFunc, "join": stdlib.JoinFunc, "lower": stdlib.LowerFunc, "upper": stdlib.UpperFunc,
	"title": stdlib.TitleFunc, "split": stdlib.SplitFunc, "substr": stdlib.SubstrFunc, "trim": stdlib.TrimFunc,
	"trimprefix": stdlib.TrimPrefixFunc, "trimsuffix": stdlib.TrimSuffixFunc, "trimspace": stdlib.TrimSpaceFunc,
	"strrev": stdlib.ReverseFunc, "format": stdlib.FormatFunc, "regex": stdlib.RegexFunc, "regexall": stdlib.RegexAllFunc,
	"replace": replaceFunc, "startswith": startsWithFunc, "endswith": endsWithFunc, "strcontains": strContainsFunc,
	"coalesce": stdlib.CoalesceFunc, "coalescelist": stdlib.CoalesceListFunc, "compact": stdlib.CompactFunc,
	"concat": stdlib.ConcatFunc, "contains": stdlib.ContainsFunc, "distinct": stdlib.DistinctFunc,
	"element": stdlib.ElementFunc, "flatten": stdlib.FlattenFunc, "index": stdlib.IndexFunc, "keys": stdlib.KeysFunc,
	"length": stdlib.LengthFunc, "lookup": stdlib.LookupFunc, "merge": stdlib.MergeFunc, "reverse": stdlib.ReverseListFunc,
	"slice": stdlib.SliceFunc, "sort": stdlib.SortFunc, "values": stdlib.ValuesFunc, "zipmap": stdlib.ZipmapFunc,
	"tostring": stdlib.MakeToFunc(cty.String), "tonumber": stdlib.MakeToFunc(cty.Number), "tobool": stdlib.MakeToFunc(cty.Bool),
	"tolist": stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)), "toset": stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
	"tomap": stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
}

// staticFunctions returns the functions for one evaluation, each bounded
// in its arguments and result, and all together by budget.
func staticFunctions(budget *int) map[string]function.Function {
	out := make(map[string]function.Function, len(staticFunctionImpls)+2)
	for name, fn := range staticFunctionImpls {
		out[name] = bounded(name, fn, budget)
	}
	out["try"], out["can"] = tryfunc.TryFunc, tryfunc.CanFunc
	return out
}

// bounded wraps fn: arguments or a result larger than maxValueSize, or
// results past the budget, are an error, and so is a format width or
// precision above 1000.
func bounded(name string, fn function.Function, budget *int) function.Function {
	spec := &function.Spec{
		Params:   fn.Params(),
		VarParam: fn.VarParam(),
		Type:     fn.ReturnTypeForValues,
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			total := 0
			for _, a := range args {
				total += valueSize(a)
			}
			if total > maxValueSize {
				return cty.NilVal, fmt.Errorf("the arguments of %s hold more than %d bytes, the most tfmirror evaluates", name, maxValueSize)
			}
			if name == "format" && len(args) > 0 && args[0].Type() == cty.String && !args[0].IsNull() && wideFormat.MatchString(args[0].AsString()) {
				return cty.NilVal, fmt.Errorf("a format width or precision above 1000 is not evaluated by tfmirror")
			}
			v, err := fn.Call(args)
			if err != nil {
				return v, err
			}
			size := valueSize(v)
			*budget += size
			if size > maxValueSize || *budget > maxEvalBytes {
				return cty.NilVal, fmt.Errorf("the result of %s is larger than tfmirror evaluates", name)
			}
			return v, nil
		},
	}
	return function.New(spec)
}

var wideFormat = regexp.MustCompile(`%[-+# 0]*(\d{4,}|\*|\[\d+\]\*)|\.(\d{4,}|\*)`)

// valueSize is about the bytes a value holds: its strings' lengths and
// one per other leaf or element.
func valueSize(v cty.Value) int {
	size := 0
	v, _ = v.UnmarkDeep()
	_ = cty.Walk(v, func(_ cty.Path, v cty.Value) (bool, error) {
		if v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
			size += len(v.AsString())
		}
		size++
		return size <= 2*maxEvalBytes, nil
	})
	return size
}

// replaceFunc is OpenTofu's replace: a substring between slashes is a
// regular expression.
var replaceFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "substr", Type: cty.String}, {Name: "replace", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		str, substr, repl := args[0].AsString(), args[1].AsString(), args[2].AsString()
		if len(substr) > 1 && substr[0] == '/' && substr[len(substr)-1] == '/' {
			re, err := regexp.Compile(substr[1 : len(substr)-1])
			if err != nil {
				return cty.UnknownVal(cty.String), err
			}
			return cty.StringVal(re.ReplaceAllString(str, repl)), nil
		}
		return cty.StringVal(strings.ReplaceAll(str, substr, repl)), nil
	},
})

func stringTest(test func(s, sub string) bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "sub", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(test(args[0].AsString(), args[1].AsString())), nil
		},
	})
}

var (
	startsWithFunc  = stringTest(strings.HasPrefix)
	endsWithFunc    = stringTest(strings.HasSuffix)
	strContainsFunc = stringTest(strings.Contains)
)
