"""Line and column ranges of a few nodes of a module.

libcst's `PositionProvider` records the range of every node in the module: about eight
times the cost of generating its code. A report needs the ranges of a handful of nodes,
so this generates the code once, counting characters, and notes offsets only where one
of those nodes starts and ends. The ranges are the same as `PositionProvider`'s
(syntactic: the whitespace a node owns is left out); `tests/test_positions.py` checks
that node by node."""

from __future__ import annotations

import bisect
import re
from contextlib import nullcontext
from typing import Iterable, Optional

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodePosition, CodeRange

_NEWLINE = re.compile(r"\r\n?|\n")


class _Offsets(CodegenState):
    """Generates the module's code, noting the character offsets of the wanted nodes."""

    def __init__(self, module: cst.Module, wanted: set[cst.CSTNode]) -> None:
        super().__init__(default_indent=module.default_indent,
                         default_newline=module.default_newline)
        self.wanted = wanted
        self.offset = 0
        self.open: list[int] = []  # where each wanted node being generated started
        self.ranges: dict[cst.CSTNode, tuple[int, int]] = {}
        self.popped = False

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def pop_trailing_newline(self) -> None:
        # Left in place until the end: ranges ending at the end of the file count that
        # newline, as libcst's do.
        self.popped = bool(self.tokens)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if node in self.wanted:
            self.open.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if node in self.wanted:
            # The whitespace-inclusive range, unless the syntactic one was recorded.
            self.ranges.setdefault(node, (self.open.pop(), self.offset))

    def record_syntactic_position(self, node: cst.CSTNode, *,
                                  start_node: Optional[cst.CSTNode] = None,
                                  end_node: Optional[cst.CSTNode] = None):
        # Called for nearly every node: a shared do-nothing context for the others
        # (a generator-based one per node cost as much as the code generation itself).
        if node not in self.wanted:
            return _NOTHING
        return _Syntactic(self, node, start_node, end_node)


_NOTHING = nullcontext()


class _Syntactic:
    """Records a wanted node's syntactic range: what is generated inside the block,
    or hoisted from children (a block's range runs from its first to its last statement)."""

    def __init__(self, state: _Offsets, node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node
        # The hoisted-from children are generated inside this block: record them too.
        for child in (start_node, end_node):
            if child is not None:
                state.wanted.add(child)

    def __enter__(self) -> None:
        self.start = self.state.offset

    def __exit__(self, *exc) -> None:
        ranges = self.state.ranges
        start = ranges[self.start_node][0] if self.start_node is not None else self.start
        end = ranges[self.end_node][1] if self.end_node is not None else self.state.offset
        ranges[self.node] = (start, end)


def code_and_ranges(module: cst.Module, nodes: Iterable[cst.CSTNode]
                    ) -> tuple[str, dict[cst.CSTNode, CodeRange]]:
    """The module's code (as `module.code`, in one cheaper pass) and the range of each of
    `nodes` found in it (nodes not in it are left out)."""
    asked = set(nodes)
    state = _Offsets(module, set(asked))
    module._codegen(state)
    code = "".join(state.tokens)
    line_starts = [0] + [m.end() for m in _NEWLINE.finditer(code)] if asked else []

    def position(offset: int) -> CodePosition:
        line = bisect.bisect_right(line_starts, offset)
        return CodePosition(line, offset - line_starts[line - 1])

    ranges = {node: CodeRange(position(start), position(end))
              for node, (start, end) in state.ranges.items() if node in asked}
    if state.popped:
        code = code[: len(code) - len(state.tokens[-1])]
    return code, ranges


def ranges_of(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[cst.CSTNode, CodeRange]:
    """The range of each of `nodes` found in `module` (nodes not in it are left out)."""
    nodes = list(nodes)
    return code_and_ranges(module, nodes)[1] if nodes else {}
