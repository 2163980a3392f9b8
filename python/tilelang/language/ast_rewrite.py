"""Rewrites the Python syntax tree of a kernel function so that running it builds IR.

Control flow whose condition may be symbolic (`if`, `while`, `for`, `and`/`or`/`not`,
chained comparisons, `x if c else y`) is routed through hook functions (hooks.py) that
decide at trace time between plain Python semantics and IR frames. Each statement first
reports its line to the builder, and the code is compiled with the user's file name and
line numbers, so tracebacks and IR spans point at the user's source."""

import ast
import inspect
import linecache
import textwrap

from .builder_ctx import TileLangError

# Statements a kernel body cannot contain, with the words used in the error.
_UNSUPPORTED = {
    ast.Try: "`try` statements",
    ast.Global: "`global` statements",
    ast.Nonlocal: "`nonlocal` statements",
    ast.AsyncFor: "`async for` loops",
    ast.AsyncWith: "`async with` blocks",
    ast.AsyncFunctionDef: "`async def` functions",
    ast.ClassDef: "class definitions",
    ast.Yield: "`yield` expressions",
    ast.YieldFrom: "`yield from` expressions",
    ast.Await: "`await` expressions",
}
for _kind, _words in (("TryStar", "`try`/`except*` statements"), ("Match", "`match` statements")):
    if hasattr(ast, _kind):
        _UNSUPPORTED[getattr(ast, _kind)] = _words

_COMPARE_NAMES = {
    ast.Lt: "lt",
    ast.LtE: "le",
    ast.Gt: "gt",
    ast.GtE: "ge",
    ast.Eq: "eq",
    ast.NotEq: "ne",
    ast.Is: "is",
    ast.IsNot: "is_not",
    ast.In: "in",
    ast.NotIn: "not_in",
}

# Files holding rewritten code; the trace entry uses them to find the user's line.
REWRITTEN_FILES: set = set()
_cache: dict = {}


def source_snippet(file, line):
    """The source line at file:line under its location, as the core's errors show it
    (support/error.h, source_snippet); "" where the file or the line cannot be read."""
    text = linecache.getline(file, line) if file and line > 0 else ""
    text = text.rstrip("\r\n")
    if not text.strip():
        return ""
    number = str(line)
    pad = " " * len(number)
    col = len(text) - len(text.lstrip(" \t")) + 1
    return f"{pad}--> {file}:{line}:{col}\n{pad} |\n{number} | {text}\n{pad} |"


def located_error(message, file, line, like=None):
    """The error `message` at file:line (followed by that source line), of the class of
    the error `like` when that is a TileLangError (a subclass that is also
    AssertionError, TypeError ... stays one)."""
    cls = type(like) if isinstance(like, TileLangError) else TileLangError
    snippet = source_snippet(file, line)
    first, sep, notes = message.partition("\n")  # the snippet goes under the first line
    text = f"{file}:{line}: {first}" + (f"\n{snippet}" if snippet else "") + sep + notes
    try:
        err = cls(text)
    except TypeError:
        err = TileLangError(text)
    err.file = file
    err.line = line
    err.bare_message = message
    return err


def _name(id_, ctx=None):
    return ast.Name(id=id_, ctx=ctx or ast.Load())


def _call(func, *args):
    return ast.Call(func=_name(func), args=list(args), keywords=[])


def _lambda(body):
    empty = ast.arguments(
        posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
    )
    return ast.Lambda(args=empty, body=body)


def _target_names(target):
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [e.id if isinstance(e, ast.Name) else f"i{k}" for k, e in enumerate(target.elts)]
    return ["i"]


def _assigned_names(stmts):
    """Names the statements bind, in order, not looking into nested scopes."""
    found = []
    stack = list(reversed(stmts))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.append(node.name)
            continue
        if isinstance(
            node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
        ):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.append(node.id)
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return list(dict.fromkeys(found))


def _tuple_of_names(names):
    return ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())


def _rebind(names, source):
    """`_tl_r = <source>` then `if "n" in _tl_r: n = _tl_r["n"]` for each name."""
    out = [ast.Assign(targets=[_name("_tl_r", ast.Store())], value=source)]
    for n in names:
        pick = ast.Subscript(value=_name("_tl_r"), slice=ast.Constant(n), ctx=ast.Load())
        test = ast.Compare(left=ast.Constant(n), ops=[ast.In()], comparators=[_name("_tl_r")])
        out.append(
            ast.If(
                test=test, body=[ast.Assign(targets=[_name(n, ast.Store())], value=pick)], orelse=[]
            )
        )
    return out


def _slice_value(node):
    """The expression of a subscript key (`a:b` becomes `slice(a, b)`)."""
    if isinstance(node, ast.Slice):
        parts = [
            p if p is not None else ast.Constant(None) for p in (node.lower, node.upper, node.step)
        ]
        return _call("_tl_slice", *parts)
    if isinstance(node, ast.Tuple):
        return ast.Tuple(elts=[_slice_value(e) for e in node.elts], ctx=ast.Load())
    return node


def _is_literal_true(node):
    return isinstance(node, ast.Constant) and node.value is True


class KernelRewriter(ast.NodeTransformer):
    """Turns one function definition into its traced form (see the module docstring)."""

    def __init__(self, filename, kernel_name, is_macro):
        self.filename = filename
        self.kernel_name = kernel_name
        self.is_macro = is_macro
        self.counter = 0
        self.func_depth = 0
        self.with_depth = 0

    def fail(self, node, construct):
        raise located_error(
            f"{construct} are not supported in the body of kernel '{self.kernel_name}'",
            self.filename,
            getattr(node, "lineno", 0),
        )

    def fresh(self, prefix):
        self.counter += 1
        return f"_tl_{prefix}{self.counter}"

    def generic_visit(self, node):
        construct = _UNSUPPORTED.get(type(node))
        if construct:
            self.fail(node, construct)
        return super().generic_visit(node)

    def block(self, stmts):
        out = []
        for stmt in stmts:
            line = ast.Expr(_call("_tl_line", ast.Constant(stmt.lineno)))
            out.append(ast.copy_location(line, stmt))
            new = self.visit(stmt)
            out.extend(new if isinstance(new, list) else [new])
        return out

    # ---- functions
    def visit_FunctionDef(self, node):
        self.func_depth += 1
        try:
            if self.func_depth == 1:
                return self._top_function(node)
            if self.with_depth and not node.decorator_list:
                self.fail(node, "nested function definitions (use @T.macro for helpers)")
            node.decorator_list = [self.visit(d) for d in node.decorator_list]
            node.decorator_list.append(_name("_tl_rewritten"))
            node.body = self.block(node.body)
            return node
        finally:
            self.func_depth -= 1

    def _top_function(self, node):
        node.decorator_list = []
        node.returns = None
        args = node.args
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None:
                a.annotation = None
        args.defaults = []
        args.kw_defaults = [None] * len(args.kwonlyargs)
        node.body = self.block(node.body)
        return node

    def visit_Expr(self, node):
        # A call whose value is dropped (`T.call_extern(...)` on its own line) is a
        # statement, as TVMScript makes it T.evaluate(...); the hook decides.
        node = self.generic_visit(node)
        call = node.value
        if isinstance(call, ast.Call) and not (
            isinstance(call.func, ast.Name) and call.func.id.startswith("_tl_")
        ):
            node.value = ast.copy_location(_call("_tl_expr_stmt", call), call)
        return node

    def visit_Lambda(self, node):
        return self.generic_visit(node)

    def visit_Return(self, node):
        self.generic_visit(node)
        if self.func_depth != 1:
            return node
        hook = "_tl_macro_return" if self.is_macro else "_tl_return"
        node.value = _call(hook, node.value or ast.Constant(None))
        return node

    # ---- assignments
    def _assign_name(self, target, value, node):
        wrapped = _call(
            "_tl_assign", _call("_tl_name", ast.Constant(target.id)), value, _call("locals")
        )
        return ast.copy_location(
            ast.Assign(targets=[_name(target.id, ast.Store())], value=wrapped), node
        )

    def visit_Assign(self, node):
        self.generic_visit(node)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            return self._assign_name(node.targets[0], node.value, node)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
            target = node.targets[0]
            store = _call("_tl_setitem", target.value, _slice_value(target.slice), node.value)
            return ast.copy_location(ast.Expr(store), node)
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0], (ast.Tuple, ast.List))
            and all(isinstance(e, (ast.Name, ast.Subscript)) for e in node.targets[0].elts)
        ):
            return self._assign_tuple(node.targets[0].elts, node.value, node)
        return node

    def _assign_tuple(self, targets, value, node):
        """`a, b = b, a` / `A[0], A[1] = A[1], A[0]`: Python evaluates every value before it
        assigns any; the values are read from memory (snapshot) first, then each target
        is assigned as on its own."""
        values = self.fresh("values")
        out = [
            ast.Assign(
                targets=[_name(values, ast.Store())],
                value=_call("_tl_unpack", value, ast.Constant(len(targets))),
            )
        ]
        for k, target in enumerate(targets):
            item = ast.Subscript(value=_name(values), slice=ast.Constant(k), ctx=ast.Load())
            if isinstance(target, ast.Name):
                out.append(self._assign_name(target, item, node))
            else:
                store = _call("_tl_setitem", target.value, _slice_value(target.slice), item)
                out.append(ast.Expr(store))
        return [ast.copy_location(s, node) for s in out]

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if not isinstance(node.target, ast.Name):
            return node
        value = ast.BinOp(left=_name(node.target.id), op=node.op, right=node.value)
        return self._assign_name(node.target, value, node)

    def visit_AnnAssign(self, node):
        self.generic_visit(node)
        if not isinstance(node.target, ast.Name):
            self.fail(node, "annotated assignments to anything but a plain name")
        name = node.target.id
        if node.value is None:
            value = _call("_tl_declare", ast.Constant(name), node.annotation)
            return ast.copy_location(
                ast.Assign(targets=[_name(name, ast.Store())], value=value), node
            )
        value = _call("_tl_annotated", node.annotation, node.value)
        return self._assign_name(node.target, value, node)

    # ---- control flow
    def visit_For(self, node):
        if node.orelse:
            self.fail(node, "`for ... else` loops")
        node.iter = self.visit(node.iter)
        targets = _target_names(node.target)
        node.iter = _call("_tl_for", node.iter, _tuple_of_names(targets))
        bound = _assigned_names([node.target, *node.body])
        node.body = self.block(node.body)
        # What the loop variables' names meant before the loop: an IR loop variable's
        # name means that again after its loop (TVMScript scopes it to the loop).
        saved = self.fresh("outer")
        keep = ast.Assign(
            targets=[_name(saved, ast.Store())],
            value=_call("_tl_outer_names", _tuple_of_names(targets), _call("locals")),
        )
        return [
            ast.copy_location(keep, node),
            node,
            *self._after_scope(bound, node, "loop", _name(saved)),
        ]

    @staticmethod
    def _after_scope(names, node, kind, outer=None):
        """Rebinds the names a loop's or `with` block's body bound to values of an IR
        scope that has ended (see hooks.scope_locals)."""
        if not names:
            return []
        found = _call("_tl_scope_locals", _tuple_of_names(names), _call("locals"))
        found.args += [ast.Constant(node.lineno), ast.Constant(kind)]
        if outer is not None:
            found.args.append(outer)
        return [ast.copy_location(s, node) for s in _rebind(names, found)]

    def visit_While(self, node):
        if node.orelse:
            self.fail(node, "`while ... else` loops")
        state = self.fresh("w")
        test = self.visit(node.test)
        enter = ast.Assign(
            targets=[_name(state, ast.Store())],
            value=_call("_tl_while", _lambda(test), ast.Constant(_is_literal_true(node.test))),
        )
        step = ast.Call(
            func=ast.Attribute(value=_name(state), attr="step", ctx=ast.Load()),
            args=[],
            keywords=[],
        )
        bound = _assigned_names(node.body)
        loop = ast.While(test=step, body=self.block(node.body), orelse=[])
        leave = ast.Expr(
            ast.Call(
                func=ast.Attribute(value=_name(state), attr="exit", ctx=ast.Load()),
                args=[],
                keywords=[],
            )
        )
        return [ast.copy_location(s, node) for s in (enter, loop, leave)] + self._after_scope(
            bound, node, "loop"
        )

    def visit_If(self, node):
        # Names the branches bind are passed to the hooks, which turn those a symbolic `if`
        # assigns in both branches into locals and make the rest unusable after it.
        cond = self.fresh("c")
        test = self.visit(node.test)
        then_names = _assigned_names(node.body)
        else_names = _assigned_names(node.orelse)
        names = list(dict.fromkeys(then_names + else_names))
        both = [n for n in then_names if n in else_names]
        enter = _call(
            "_tl_if", test, _tuple_of_names(names), _tuple_of_names(both), _call("locals")
        )
        out = [ast.Assign(targets=[_name(cond, ast.Store())], value=enter)]
        out.append(ast.If(test=_name(cond), body=self.block(node.body), orelse=[]))
        if node.orelse:
            body = self.block(node.orelse)
            if then_names:
                body = _rebind(then_names, _call("_tl_else_locals", _name(cond))) + body
            out.append(ast.If(test=_call("_tl_else", _name(cond)), body=body, orelse=[]))
        if names:
            out.extend(_rebind(names, _call("_tl_endif", _name(cond))))
        else:
            out.append(ast.Expr(_call("_tl_endif", _name(cond))))
        return [ast.copy_location(s, node) for s in out]

    def visit_Break(self, node):
        return ast.copy_location(ast.If(test=_call("_tl_break"), body=[node], orelse=[]), node)

    def visit_Continue(self, node):
        return ast.copy_location(ast.If(test=_call("_tl_continue"), body=[node], orelse=[]), node)

    def visit_With(self, node):
        for item in node.items:
            item.context_expr = _call("_tl_with", self.visit(item.context_expr))
            target = item.optional_vars
            if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 1:
                item.context_expr.args.append(ast.Constant(1))  # `as (bx,)`: a 1-tuple
            if item.optional_vars is not None:
                item.optional_vars = self.visit(item.optional_vars)
        bound = _assigned_names(node.body)
        self.with_depth += 1
        try:
            node.body = self.block(node.body)
        finally:
            self.with_depth -= 1
        return [node, *self._after_scope(bound, node, "with")]

    # ---- expressions whose Python meaning depends on symbolic operands
    def visit_BoolOp(self, node):
        self.generic_visit(node)
        hook = "_tl_and" if isinstance(node.op, ast.And) else "_tl_or"
        first, rest = node.values[0], node.values[1:]
        return ast.copy_location(_call(hook, first, *[_lambda(v) for v in rest]), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call("_tl_not", node.operand), node)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        pairs = [
            ast.Tuple(elts=[ast.Constant(_COMPARE_NAMES[type(op)]), _lambda(right)], ctx=ast.Load())
            for op, right in zip(node.ops, node.comparators)
        ]
        return ast.copy_location(
            _call("_tl_compare", node.left, ast.Tuple(elts=pairs, ctx=ast.Load())), node
        )

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return ast.copy_location(
            _call("_tl_ifexp", node.test, _lambda(node.body), _lambda(node.orelse)), node
        )


def _parse_function(func):
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        raise TileLangError(
            f"cannot read the source of kernel '{func.__name__}'; kernels must be defined in a "
            "file, not in an interactive prompt or via exec()"
        ) from None
    tree = ast.parse(textwrap.dedent(source))
    ast.increment_lineno(tree, func.__code__.co_firstlineno - 1)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not defs:
        raise TileLangError(f"kernel '{func.__name__}' must be a plain `def` function")
    return ast.Module(body=[defs[0]], type_ignores=[])


def rewritten_code(func, is_macro=False):
    """(code object defining the traced function, its name), cached per function code."""
    key = (func.__code__, is_macro)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    filename = func.__code__.co_filename
    module = _parse_function(func)
    rewriter = KernelRewriter(filename, func.__name__, is_macro)
    module = ast.fix_missing_locations(rewriter.visit(module))
    code = compile(module, filename, "exec")
    REWRITTEN_FILES.add(filename)
    _cache[key] = (code, module.body[0].name)
    return _cache[key]
