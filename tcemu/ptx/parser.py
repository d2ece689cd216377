"""PTX module text -> a tree of declarations and instructions (PTX ISA chapters 4, 5, 7, 11).

Covers what nvcc 12/13 and Triton 3.x emit: module directives, global/const/shared variables with
initialisers, `.extern .shared` arrays, `.entry` / `.func` with parameters and performance directives,
register declarations (`%r<N>`, vectors), nested `{ }` scopes of inline asm (their registers and labels are
scoped), labels, guards, vector and address operands (`[desc, {c0, c1}]` too), `.loc` lines attached to
the next instruction, `.file` names, and debug `.section`s (skipped). Errors carry line and column.
"""
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

from ..core.validate import show
from .errors import PtxLimit, PtxSyntaxError
from .types import ptx_type

# Virtual registers a PTX function may declare (PTX sets no limit; ptxas allocates at most 255 per thread). The
# bundled kernels declare at most 6,794 in one range and 7,490 in one function. At the per-function limit a
# kernel loads and compiles in about 1 s and 170 MB (a million registers: 6 s, 370 MB); each register then
# costs 32 lanes x up to 8 bytes per warp of a launch (Module.launch's memory estimate).
MAX_REGS_PER_DECLARATION = 65_536
MAX_REGS_PER_FUNCTION = 262_144

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+|\\\n)
  | (?P<nl>\n)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<float>0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16})
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|0[bB][01]+[uU]?|\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+[uU]?)
  | (?P<ident>[A-Za-z_$%.][A-Za-z0-9_$]*(?:(?:\.|::)[A-Za-z0-9_$]+)*)
  | (?P<punct>[{}\[\](),;:+\-!@<>=|*])
""", re.VERBOSE | re.DOTALL)


@dataclass
class Token:
    kind: str
    text: str
    line: int
    col: int


def tokenize(text: str) -> List[Token]:
    out, pos, line, line_start = [], 0, 1, 0
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise PtxSyntaxError(line, pos - line_start + 1, f"unexpected character {show(text[pos])}")
        kind = m.lastgroup
        tok = m.group(kind)
        if kind == "nl":
            line, line_start = line + 1, m.end()
        elif kind in ("ws", "comment"):
            if "\n" in tok:
                line += tok.count("\n")
                line_start = pos + tok.rfind("\n") + 1
        else:
            out.append(Token(kind, tok, line, pos - line_start + 1))
        pos = m.end()
    return out


# ---------------------------------------------------------------------------------------------- tree

@dataclass(frozen=True)
class Reg:
    name: str           # scoped name (unique in its function)


@dataclass(frozen=True)
class Imm:
    value: int          # integers; float immediates keep their raw bits with `fbits`
    fbits: int = 0      # 0: an integer literal; 32/64: a 0f/0d literal (value = raw bits); -1: decimal float


@dataclass(frozen=True)
class FloatLit:
    value: float        # a decimal floating literal (rare in generated code)


@dataclass(frozen=True)
class Sym:
    name: str           # a variable, parameter, label or function name
    offset: int = 0


@dataclass(frozen=True)
class Special:
    name: str           # %tid.x, %laneid, %clock64, ...


@dataclass(frozen=True)
class Vec:
    items: Tuple


@dataclass(frozen=True)
class Addr:
    base: object        # Reg, Sym or None (absolute address)
    offset: int = 0
    vec: Optional[Vec] = None   # `[tmap, {c0, c1}]`: TMA coordinates


@dataclass(frozen=True)
class Pair:
    first: object       # `%r|%p`: a value and a predicate written by one instruction (shfl, elect, ...)
    second: object


@dataclass(frozen=True)
class Not:
    item: object        # !%p


@dataclass(frozen=True)
class Sink:
    pass                # _


Operand = Union[Reg, Imm, FloatLit, Sym, Special, Vec, Addr, Not, Pair, Sink]


@dataclass
class Instruction:
    opcode: str                  # "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"
    operands: List[object]
    guard: Optional[Tuple[str, bool]]  # (scoped predicate register, negated)
    line: int                    # PTX line
    col: int
    loc: Optional[Tuple[str, int, int]] = None  # (source file, line, column) from the last .loc
    scope: int = 0               # innermost { } scope: labels resolve from here outwards
    owner: str = ""              # the .func a called body came from (set when it is merged into a kernel)

    @property
    def parts(self) -> List[str]:
        return self.opcode.split(".")

    def where(self) -> str:
        src = f" ({self.loc[0]}:{self.loc[1]})" if self.loc else ""
        return f"line {self.line}{src}"

    def text(self) -> str:
        g = f"@{'!' if self.guard[1] else ''}{self.guard[0].split('@')[0]} " if self.guard else ""
        return f"{g}{self.opcode} {', '.join(fmt(o) for o in self.operands)}".strip()


def fmt(o) -> str:
    if isinstance(o, Reg):
        return o.name.split("@")[0]
    if isinstance(o, Imm):
        return f"0f{o.value:08X}" if o.fbits == 32 else (f"0d{o.value:016X}" if o.fbits == 64 else str(o.value))
    if isinstance(o, FloatLit):
        return repr(o.value)
    if isinstance(o, Sym):
        return o.name + (f"+{o.offset}" if o.offset else "")
    if isinstance(o, Special):
        return o.name
    if isinstance(o, Vec):
        items = [fmt(i) for i in o.items]
        if len(items) > 6:  # wgmma's 128 accumulators: first, last and the count
            items = items[:2] + [f"... {len(items) - 4} more ..."] + items[-2:]
        return "{" + ", ".join(items) + "}"
    if isinstance(o, Addr):
        inner = fmt(o.base) if o.base is not None else ""
        if o.offset:
            inner += f"+{o.offset}" if inner else str(o.offset)
        if o.vec is not None:
            inner += ", " + fmt(o.vec)
        return f"[{inner}]"
    if isinstance(o, Not):
        return "!" + fmt(o.item)
    if isinstance(o, Pair):
        return fmt(o.first) + "|" + fmt(o.second)
    if isinstance(o, Sink):
        return "_"
    return str(o)


@dataclass
class VarDecl:
    space: str          # "global", "const", "shared", "local", "param", "reg"
    type: str           # element type, e.g. "b8"
    name: str
    align: int
    count: Optional[int]   # array length (None: scalar; 0: unsized `[]`)
    init: Optional[List[int]] = None
    extern: bool = False
    vector: int = 1
    ptr_space: Optional[str] = None  # `.ptr .global` on kernel parameters
    line: int = 0

    @property
    def size(self) -> int:
        elem = max(1, ptx_type(self.type).bits // 8) * self.vector
        return elem * (self.count if self.count else 1)


@dataclass
class Function:
    name: str
    entry: bool
    params: List[VarDecl]
    returns: List[VarDecl]
    body: List[Instruction] = field(default_factory=list)
    regs: Dict[str, str] = field(default_factory=dict)       # scoped name -> type
    labels: Dict[Tuple[int, str], int] = field(default_factory=dict)  # (scope, label) -> instruction index
    scope_parent: Dict[int, int] = field(default_factory=dict)
    locals: List[VarDecl] = field(default_factory=list)     # .local / .shared declared in the body
    directives: Dict[str, List[int]] = field(default_factory=dict)  # .reqntid, .maxntid, .reqnctapercluster...
    branch_targets: Dict[str, List[str]] = field(default_factory=dict)  # .branchtargets lists
    line: int = 0
    nregs_declared: int = 0   # registers (vector elements counted) declared so far: MAX_REGS_PER_FUNCTION
    call_decls: Dict[Tuple[int, str], "CallDecl"] = field(default_factory=dict)  # (scope, label) -> decl


@dataclass
class CallDecl:
    """`label: .callprototype (rets) _ (params);` or `label: .calltargets f, g;` (PTX ISA 10.3, 10.4)."""
    kind: str                 # "callprototype" or "calltargets"
    returns: List[VarDecl]
    params: List[VarDecl]
    targets: List[str]
    line: int


@dataclass
class Module:
    version: str = ""
    target: List[str] = field(default_factory=list)
    address_size: int = 64
    variables: List[VarDecl] = field(default_factory=list)
    functions: Dict[str, Function] = field(default_factory=dict)
    files: Dict[int, str] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- parser

_SPACES = {".global": "global", ".const": "const", ".shared": "shared", ".local": "local", ".param": "param",
           ".reg": "reg", ".tex": "tex"}
_LINKAGE = {".visible", ".extern", ".weak", ".common"}
_PERF = {".reqntid", ".maxntid", ".minnctapersm", ".maxnctapersm", ".maxnreg", ".reqnctapercluster",
         ".maxclusterrank", ".explicitcluster", ".noreturn", ".blocksareclusters", ".abi_preserve",
         ".abi_preserve_control"}
_SPECIALS = re.compile(r"%(tid|ntid|laneid|warpid|nwarpid|ctaid|nctaid|smid|nsmid|gridid|lanemask_(eq|le|lt|ge|gt)|"
                       r"clock|clock64|clock_hi|globaltimer|globaltimer_lo|globaltimer_hi|pm\d|pm\d_64|envreg\d+|"
                       r"dynamic_smem_size|total_smem_size|aggr_smem_size|reserved_smem_offset_\w+|"
                       r"cluster_ctaid|cluster_nctaid|cluster_ctarank|cluster_nctarank|is_explicit_cluster|"
                       r"clusterid|nclusterid|current_graph_exec)(\.[xyz])?$")


class _Parser:
    def __init__(self, text: str):
        self.toks = tokenize(text)
        self.i = 0
        self.module = Module()
        self.loc = None

    # -- token helpers
    def peek(self, k=0) -> Token:
        """The token k ahead, or an "eof" token past the end (text ""), so no caller reads None."""
        j = self.i + k
        if j < len(self.toks):
            return self.toks[j]
        last = self.toks[-1] if self.toks else Token("eof", "", 1, 1)
        return Token("eof", "", last.line, last.col + len(last.text))

    def next(self) -> Token:
        t = self.peek()
        if t.kind == "eof":
            raise PtxSyntaxError(t.line, t.col, "unexpected end of file")
        self.i += 1
        return t

    def error(self, tok: Token, rule: str):
        raise PtxSyntaxError(tok.line, tok.col, rule)

    def expect(self, text: str) -> Token:
        t = self.next()
        if t.text != text:
            self.error(t, f"expected {show(text)}, found {show(t.text)}")
        return t

    def accept(self, text: str) -> bool:
        t = self.peek()
        if t is not None and t.text == text:
            self.i += 1
            return True
        return False

    def integer(self) -> int:
        neg = self.accept("-")
        t = self.next()
        if t.kind != "number" or "." in t.text:
            self.error(t, f"expected an integer, found {show(t.text)}")
        v = _int(t.text)
        return -v if neg else v

    # -- module level
    def parse(self) -> Module:
        m = self.module
        while self.peek().kind != "eof":
            t = self.peek()
            if t.text == ".version":
                self.next()
                m.version = self.next().text
            elif t.text == ".target":
                self.next()
                m.target = [self.next().text]
                while self.accept(","):
                    m.target.append(self.next().text)
            elif t.text == ".address_size":
                self.next()
                m.address_size = self.integer()
            elif t.text == ".file":
                self.next()
                num = self.integer()
                name = self.next()
                if name.kind != "string":
                    self.error(name, "expected a file name string")
                m.files[num] = name.text[1:-1]
                while self.peek().kind != "eof" and self.peek().kind == "number" or self.accept(","):
                    if self.peek().kind != "eof" and self.peek().kind == "number":
                        self.next()
            elif t.text == ".section":
                self.skip_section()
            elif t.text == ".loc":
                self.parse_loc()
            elif t.text in (".pragma",):
                self.next()
                self.next()
                self.expect(";")
            else:
                self.parse_declaration()
        return m

    def skip_section(self):
        self.next()
        self.next()  # the section name
        self.expect("{")
        depth = 1
        while depth:
            t = self.next()
            depth += (t.text == "{") - (t.text == "}")

    def parse_loc(self):
        start = self.next()
        nums = []
        while self.peek().kind != "eof" and self.peek().kind == "number" and self.peek().line == start.line:
            nums.append(_int(self.next().text))
        # trailing `, function_name $L__info_string0, inlined_at 1 9 17` on the same line
        while self.peek().kind != "eof" and self.peek().line == start.line and self.peek().text != ";":
            self.next()
        if len(nums) >= 2:
            self.loc = (nums[0], nums[1], nums[2] if len(nums) > 2 else 0)  # file number: named after parsing

    def parse_declaration(self):
        linkage = set()
        while self.peek().kind != "eof" and self.peek().text in _LINKAGE:
            linkage.add(self.next().text)
        t = self.peek()
        if t.kind == "eof":
            return
        if t.text in (".entry", ".func"):
            self.parse_function(linkage)
        elif t.text in _SPACES:
            var = self.parse_variable(extern=".extern" in linkage)
            self.expect(";")
            if not var.extern and any(v.name == var.name and not v.extern for v in self.module.variables):
                self.error(t, f"Duplicate definition of variable '{var.name}'")  # PTX ISA 5.1: one per scope
            self.module.variables.append(var)
        elif t.text == ".alias":
            while self.next().text != ";":
                pass
        else:
            self.error(t, f"unexpected {show(t.text)} at module scope")

    def parse_variable(self, extern=False, param=False) -> VarDecl:
        start = self.next()
        space = _SPACES.get(start.text)
        if space is None:
            self.error(start, f"expected a state space, found {show(start.text)}")
        align, vector, typ, ptr_space = 0, 1, None, None
        while True:
            t = self.peek()
            if t.text == ".align":
                self.next()
                align = self.integer()
            elif t.text.startswith(".v") and t.text[2:].isdigit():
                vector = int(self.next().text[2:])
            elif t.text == ".ptr":
                self.next()
                if self.peek().text in _SPACES:
                    ptr_space = _SPACES[self.next().text]
                if self.peek().text == ".align":
                    self.next()
                    self.integer()
            elif t.kind == "ident" and t.text.startswith(".") and typ is None:
                typ = self.next().text[1:]
            elif t.kind == "ident" and t.text.startswith("."):
                self.next()  # e.g. .attribute(...) spellings we do not model
            else:
                break
        if typ is None:
            self.error(self.peek(), "declaration without a type")
        name_tok = self.next()
        if name_tok.kind != "ident":
            self.error(name_tok, f"expected a name, found {show(name_tok.text)}")
        decl = VarDecl(space, typ, name_tok.text, align, None, None, extern, vector, ptr_space, name_tok.line)
        if self.accept("<"):
            decl.count = -self.integer()  # register range %r<N>: negative marks a range
            self.expect(">")
        elif self.accept("["):
            if self.accept("]"):
                decl.count = 0
            else:
                decl.count = self.integer()
                self.expect("]")
            while self.accept("["):  # multi-dimensional arrays: flatten
                decl.count *= self.integer()
                self.expect("]")
        if self.accept("="):
            decl.init = self.parse_initializer()
        return decl

    def parse_initializer(self) -> List[int]:
        vals = []
        if self.accept("{"):
            while not self.accept("}"):
                if self.peek().text == "{":
                    vals.extend(self.parse_initializer())
                else:
                    vals.append(self.init_value())
                self.accept(",")
        else:
            vals.append(self.init_value())
        return vals

    def init_value(self):
        t = self.peek()
        if t.kind == "float":
            self.next()
            return _int("0x" + t.text[2:])
        if t.kind == "ident":  # generic(sym) / sym addresses: record names as strings
            self.next()
            if self.accept("("):
                name = self.next().text
                self.expect(")")
                return name
            return t.text
        return self.integer()

    # -- functions
    def parse_function(self, linkage):
        kind = self.next()
        returns = []
        if kind.text == ".func" and self.peek().text == "(":
            returns = self.param_list()
        name = self.next()
        if name.kind != "ident":
            self.error(name, f"expected a function name, found {show(name.text)}")
        params = self.param_list() if self.peek().text == "(" else []
        fn = Function(name.text, kind.text == ".entry", params, returns, line=name.line)
        while self.peek().kind != "eof" and self.peek().text in _PERF:
            d = self.next().text
            vals = []
            while self.peek().kind != "eof" and self.peek().kind == "number":
                vals.append(self.integer())
                if not self.accept(","):
                    break
            fn.directives[d[1:]] = vals
        if self.accept(";"):  # a prototype (extern function)
            self.module.functions.setdefault(fn.name, fn)
            return
        old = self.module.functions.get(fn.name)
        if old is not None and old.body:  # PTX ISA 11.3: one definition per function name
            self.error(name, f"Duplicate definition of function '{fn.name}' (first defined on line {old.line})")
        self.parse_body(fn)
        self.module.functions[fn.name] = fn

    def param_list(self) -> List[VarDecl]:
        self.expect("(")
        out = []
        while not self.accept(")"):
            out.append(self.parse_variable(param=True))
            self.accept(",")
        return out

    def parse_body(self, fn: Function):
        self.expect("{")
        self.loc = None  # a .loc describes the instructions after it in its own function only
        scopes = [0]
        next_scope = 1
        names: List[Dict[str, str]] = [{}]  # per scope: declared register name -> scoped name

        def resolve(name):
            for d in reversed(names):
                if name in d:
                    return d[name]
            return None

        pending_labels = []
        while True:
            t = self.peek()
            if t.kind == "eof":
                self.error(t, f"function {fn.name} is not closed")
            if t.text == "}":
                self.next()
                if len(scopes) == 1:
                    break
                scopes.pop()
                names.pop()
                continue
            if t.text == "{":
                self.next()
                fn.scope_parent[next_scope] = scopes[-1]
                scopes.append(next_scope)
                names.append({})
                next_scope += 1
                continue
            if t.text == ".loc":
                self.parse_loc()
                continue
            if t.text in (".pragma",):
                self.next()
                self.next()
                self.expect(";")
                continue
            if t.text == ".section":
                self.skip_section()
                continue
            if t.text == ".reg" or t.text.startswith(".reg."):   # cuda_fp16.hpp's inline asm: `.reg.b32 f;`
                self.parse_regs(fn, scopes[-1], names[-1])
                continue
            if t.text in _SPACES:  # .local / .shared / .param arrays inside the body
                var = self.parse_variable()
                while self.accept(","):
                    extra = self.next()
                    fn.locals.append(VarDecl(var.space, var.type, extra.text, var.align, None, line=extra.line))
                self.expect(";")
                fn.locals.append(var)
                continue
            if t.kind == "ident" and self.peek(1).kind != "eof" and self.peek(1).text == ":" and \
                    not t.text.startswith("%"):
                self.next()
                self.next()
                if self.peek().kind != "eof" and self.peek().text == ".branchtargets":
                    self.next()
                    targets = [self.next().text]
                    while self.accept(","):
                        targets.append(self.next().text)
                    self.expect(";")
                    fn.branch_targets[t.text] = targets
                    continue
                if self.peek().kind != "eof" and self.peek().text in (".callprototype", ".calltargets"):
                    fn.call_decls[(scopes[-1], t.text)] = self.parse_call_decl(t)
                    continue
                key = (scopes[-1], t.text)
                if key in fn.labels:
                    self.error(t, f"label {t.text} defined twice in one scope")
                fn.labels[key] = len(fn.body)
                pending_labels.append(t)
                continue
            fn.body.append(self.parse_instruction(scopes[-1], resolve))

    def parse_call_decl(self, label) -> CallDecl:
        kind = self.next().text[1:]
        if kind == "calltargets":
            names = [self.next().text]
            while self.accept(","):
                names.append(self.next().text)
            self.expect(";")
            return CallDecl(kind, [], [], names, label.line)
        rets = self.param_list() if self.peek().text == "(" else []
        self.expect("_")
        params = self.param_list() if self.peek().text == "(" else []
        while self.peek().kind != "eof" and self.peek().text in _PERF:   # .noreturn
            self.next()
        self.expect(";")
        return CallDecl(kind, rets, params, [], label.line)

    def parse_regs(self, fn, scope, scope_names):
        glued = ["." + p for p in self.next().text.split(".")[2:]]   # `.reg.b32`: the type glued on
        vector = 1
        typ = None
        while glued or (self.peek().text.startswith(".") and self.peek().kind == "ident"):
            s = glued.pop(0) if glued else self.next().text
            if s.startswith(".v") and s[2:].isdigit():
                vector = int(s[2:])
            elif s == ".align":
                self.integer()
            else:
                typ = s[1:]
        if typ is None:
            self.error(self.peek(), ".reg without a type")
        while True:
            name = self.next()
            if name.kind != "ident":
                self.error(name, f"expected a register name, found {show(name.text)}")
            count = None
            if self.accept("<"):
                count_tok = self.peek()
                count = self.integer()
                self.expect(">")
                self.check_regs(fn, name, count_tok, count, vector)
            else:
                self.check_regs(fn, name, name, None, vector)
            names = [f"{name.text}{i}" for i in range(count)] if count is not None else [name.text]
            if count is not None and name.text[-1].isdigit():
                names = []   # ptxas 13.0/13.4 declare no usable name for %x1<4> (%x10 is an "Unknown symbol")
            for n in names:
                scoped = n if scope == 0 else f"{n}@{scope}"
                if n in scope_names:  # PTX ISA 5.1: a name is declared once per scope
                    self.error(name, f"Duplicate definition of variable '{n}'")
                scope_names[n] = scoped
                for lane in (range(vector) if vector > 1 else [None]):
                    key = scoped if lane is None else f"{scoped}.{'xyzw'[lane]}"
                    fn.regs[key] = typ
            if not self.accept(","):
                break
        self.expect(";")

    def check_regs(self, fn, name, tok, count, vector):
        """Refuse a register declaration (or a function's running total) above the named limits before a
        single name is made: `.reg .b64 %rd<0xFFFFFFFFFFFFFFFFFFFF>` would otherwise never finish."""
        if vector not in (1, 2, 4, 8):
            self.error(tok, f".reg .v{vector}: vectors have 2, 4 or 8 elements")
        if count is not None and count < 0:
            self.error(tok, f"{name.text}<{count}>: a register range holds a non-negative count")
        n = (1 if count is None else count) * vector
        where = f"line {tok.line}, column {tok.col}"
        if count is not None and count > MAX_REGS_PER_DECLARATION:
            raise PtxLimit(where, f".reg {name.text}<{count}> declares {count:,} registers; tcemu allows at most "
                                  f"{MAX_REGS_PER_DECLARATION:,} per declaration "
                                  f"(tcemu.ptx.parser.MAX_REGS_PER_DECLARATION)")
        fn.nregs_declared += n
        if fn.nregs_declared > MAX_REGS_PER_FUNCTION:
            raise PtxLimit(where, f".reg {name.text}: {fn.name} declares {fn.nregs_declared:,} registers so far; "
                                  f"tcemu allows at most {MAX_REGS_PER_FUNCTION:,} per function "
                                  f"(tcemu.ptx.parser.MAX_REGS_PER_FUNCTION)")

    def parse_instruction(self, scope, resolve) -> Instruction:
        guard = None
        first = self.peek()
        if self.accept("@"):
            neg = self.accept("!")
            p = self.next()
            scoped = resolve(p.text)
            if scoped is None:
                self.error(p, f"guard {p.text} is not a declared predicate register")
            guard = (scoped, neg)
        op = self.next()
        if op.kind != "ident" or op.text.startswith(("%", ".")):
            self.error(op, f"expected an instruction, found {show(op.text)}")
        operands = []
        if not self.accept(";"):
            while True:
                operands.append(self.parse_operand(resolve))
                if self.accept("|"):
                    operands[-1] = Pair(operands[-1], self.parse_operand(resolve))
                if self.accept(";"):
                    break
                t = self.next()
                if t.text != ",":
                    self.error(t, f"expected ',' or ';' after an operand, found {show(t.text)}")
        return Instruction(op.text, operands, guard, first.line, first.col, self.loc, scope)

    def parse_list(self, close, resolve):
        """A brace vector {a, b} or a call's argument list (a, b), from its opening token: a Vec."""
        self.next()
        items = []
        while not self.accept(close):
            items.append(self.parse_operand(resolve))
            self.accept(",")
        return Vec(tuple(items))

    def parse_operand(self, resolve):
        t = self.peek()
        if t.text == "{":
            return self.parse_list("}", resolve)
        if t.text == "[":
            return self.parse_address(resolve)
        if t.text == "!":
            self.next()
            return Not(self.parse_operand(resolve))
        if t.text == "-" and self.peek(1).kind != "eof" and self.peek(1).kind in ("number", "float"):
            self.next()
            v = self.parse_operand(resolve)
            if isinstance(v, FloatLit):
                return FloatLit(-v.value)
            if v.fbits:
                return Imm(v.value ^ (1 << (v.fbits - 1)), v.fbits)
            return Imm(-v.value)
        if t.text == "(":  # call argument lists: (a, b)
            return self.parse_list(")", resolve)
        tok = self.next()
        if tok.kind == "float":
            return Imm(_int("0x" + tok.text[2:]), 32 if tok.text[1] in "fF" else 64)
        if tok.kind == "number":
            if "." in tok.text or "e" in tok.text.lower() and not tok.text.lower().startswith("0x"):
                return FloatLit(float(tok.text))
            v = _int(tok.text)
            if v >= _OVERFLOW and not tok.text.lower().startswith("0x"):
                self.error(tok, f"Constant overflow: {show(tok.text, 40)} (ptxas 13 refuses decimal and octal "
                                "literals of 5 * 2^64 and more)")
            return Imm(v)
        if tok.kind != "ident":
            self.error(tok, f"unexpected {show(tok.text)} in an operand")
        if tok.text == "_":
            return Sink()
        scoped = resolve(tok.text)  # registers may be named without % (inline asm: `.reg .pred complete;`)
        if scoped is not None:
            return Reg(scoped)
        if tok.text.startswith("%"):
            if "." in tok.text and resolve(tok.text.split(".")[0]) is not None:  # vector register lane %v.x
                base, lane = tok.text.split(".", 1)
                return Reg(f"{resolve(base)}.{lane}")
            if _SPECIALS.match(tok.text):
                return Special(tok.text)
            return Sym(tok.text)  # %SP-style names declared as variables, or an error at compile time
        off = 0
        if self.peek().kind != "eof" and self.peek().text in ("+", "-") and self.peek(1).kind != "eof" \
                and self.peek(1).kind == "number":
            sign = -1 if self.next().text == "-" else 1
            off = sign * self.integer()
        return Sym(tok.text, off)

    def parse_address(self, resolve):
        self.expect("[")
        base, off, vec = None, 0, None
        t = self.peek()
        if t.kind == "ident":
            self.next()
            if resolve(t.text) is not None:
                base = Reg(resolve(t.text))
            elif t.text.startswith("%") and _SPECIALS.match(t.text):
                self.error(t, "a special register cannot be an address")
            else:
                base = Sym(t.text)
        elif t.kind == "number" or t.text == "-":
            off = self.integer()
        while self.peek().text in ("+", "-"):
            sign = -1 if self.next().text == "-" else 1
            off += sign * self.integer()
        if self.accept(","):
            v = self.parse_operand(resolve)
            vec = v if isinstance(v, Vec) else Vec((v,))
        self.expect("]")
        return Addr(base, off, vec)


class _BadLiteral(ValueError):
    def __init__(self, text):
        super().__init__(text)
        self.text = text


_OVERFLOW = 5 << 64   # measured: ptxas 13.0 reads 92233720368547758079 and refuses 92233720368547758080


def _int(text: str) -> int:
    t = text.rstrip("uU")
    try:
        if t.lower().startswith("0x"):
            return int(t, 16)
        if t.lower().startswith("0b"):
            return int(t, 2)
        if len(t) > 1 and t.startswith("0") and t.isdigit():
            return int(t, 8)  # PTX octal literals
        return int(t)
    except ValueError:
        raise _BadLiteral(text) from None


def parse(text: str) -> Module:
    """Parse a whole PTX module; PtxSyntaxError names the line and column of the first problem."""
    if not isinstance(text, str):
        raise PtxSyntaxError(1, 1, f"PTX text must be a str, got {type(text).__name__}")
    parser = _Parser(text)
    try:
        module = parser.parse()
    except _BadLiteral as e:  # a number token that is no PTX integer literal ("08", "1e08" where an int goes)
        tok = parser.toks[max(parser.i - 1, 0)] if parser.toks else Token("eof", "", 1, 1)
        raise PtxSyntaxError(tok.line, tok.col, f"{show(e.text)} is not an integer literal (PTX 4.5.1: decimal, "
                                                "0x hex, 0b binary, 0 octal)") from None
    names = {}  # .file directives may follow the code (Triton puts them last)
    for fn in module.functions.values():
        for ins in fn.body:
            if ins.loc is not None and isinstance(ins.loc[0], int):
                key = ins.loc
                if key not in names:
                    names[key] = (module.files.get(key[0], str(key[0])),) + key[1:]
                ins.loc = names[key]
    return module
