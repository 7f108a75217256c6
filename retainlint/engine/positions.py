"""Line and column ranges of a few nodes of a module.

libcst's `PositionProvider` records the range of every node in the module: about eight
times the cost of generating its code. A report needs the ranges of a handful of nodes,
so this generates the code, counting characters, and notes offsets only where one of
those nodes starts and ends; given the file's text, it stops as soon as the last of them
is done (on average halfway through the file). The ranges are the same as
`PositionProvider`'s (syntactic: the whitespace a node owns is left out);
`tests/engine/test_positions.py` checks that node by node."""

from __future__ import annotations

import bisect
import re
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType
from typing import Iterable, Optional

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodePosition, CodeRange

_NEWLINE = re.compile(r"\r\n?|\n")


class _Done(Exception):
    """Every asked node's range is known: the rest of the code is not needed."""


class _Offsets(CodegenState):
    """Generates the module's code, noting the character offsets of the wanted nodes.
    Nodes are tracked by `id`: `CSTNode.__hash__` is a Python call, and these tests run
    for every node generated."""

    def __init__(self, module: cst.Module, asked: list[cst.CSTNode], stop_early: bool) -> None:
        super().__init__(default_indent=module.default_indent,
                         default_newline=module.default_newline)
        self.wanted = {id(n) for n in asked}
        self.pending = set(self.wanted) if stop_early else None  # asked, not done yet
        self.offset = 0
        self.open: list[int] = []  # where each wanted node being generated started
        self.ranges: dict[int, tuple[int, int]] = {}

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def pop_trailing_newline(self) -> None:
        pass  # kept: ranges ending at the end of the file count that newline, as libcst's do

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self.open.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self.wanted:
            # The whitespace-inclusive range, unless the syntactic one was recorded.
            self.ranges.setdefault(key, (self.open.pop(), self.offset))
            self.done(key)

    def done(self, key: int) -> None:
        if self.pending is not None:
            self.pending.discard(key)
            if not self.pending:
                raise _Done

    # libcst's annotation is the type of its own @contextmanager; libcst only enters what
    # this returns, which any context manager can be.
    def record_syntactic_position(  # type: ignore[override]
            self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None,
            end_node: Optional[cst.CSTNode] = None) -> AbstractContextManager[None]:
        # Called for nearly every node: a shared do-nothing context for the others
        # (a generator-based one per node cost as much as the code generation itself).
        if id(node) not in self.wanted:
            return _NOTHING
        return _Syntactic(self, node, start_node, end_node)


_NOTHING = nullcontext()


class _Syntactic:
    """Records a wanted node's syntactic range: what is generated inside the block,
    or hoisted from children (a block's range runs from its first to its last statement)."""

    def __init__(self, state: _Offsets, node: cst.CSTNode, start_node: Optional[cst.CSTNode],
                 end_node: Optional[cst.CSTNode]) -> None:
        self.state, self.key = state, id(node)
        self.start_key = id(start_node) if start_node is not None else None
        self.end_key = id(end_node) if end_node is not None else None
        # The hoisted-from children are generated inside this block: record them too.
        state.wanted.update(k for k in (self.start_key, self.end_key) if k is not None)

    def __enter__(self) -> None:
        self.start = self.state.offset

    def __exit__(self, kind: Optional[type[BaseException]], error: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        if kind is not None:
            return  # stopping early (or failing): nothing to record
        ranges = self.state.ranges
        start = ranges[self.start_key][0] if self.start_key is not None else self.start
        end = ranges[self.end_key][1] if self.end_key is not None else self.state.offset
        ranges[self.key] = (start, end)
        self.state.done(self.key)


def ranges_of(module: cst.Module, nodes: Iterable[cst.CSTNode], source: Optional[str] = None
              ) -> dict[cst.CSTNode, CodeRange]:
    """The range of each of `nodes` found in `module` (nodes not in it are left out).
    `source`: the module's text, when the caller has it; the code is then generated
    only as far as the last of `nodes`."""
    asked = list(nodes)
    if not asked:
        return {}
    state = _Offsets(module, asked, stop_early=source is not None)
    try:
        module._codegen(state)
        stopped = False
    except _Done:
        stopped = True
    code = "".join(state.tokens)
    # libcst can drop a character it does not keep (a leading form feed): then the
    # generated code, not the file's text, is what the offsets count.
    text = code
    if stopped and source is not None:  # only a run given the text stops early
        if not source.startswith(code):
            return ranges_of(module, asked)
        text = source
    line_starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def position(offset: int) -> CodePosition:
        line = bisect.bisect_right(line_starts, offset)
        return CodePosition(line, offset - line_starts[line - 1])

    found: dict[cst.CSTNode, CodeRange] = {}
    for node in asked:
        span = state.ranges.get(id(node))
        if span is not None:
            found[node] = CodeRange(position(span[0]), position(span[1]))
    return found
