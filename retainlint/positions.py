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
from contextlib import contextmanager
from typing import Iterable, Iterator, Optional

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

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def pop_trailing_newline(self) -> None:
        # Ranges ending at the end of the file count that newline, as libcst's do.
        pass

    def before_codegen(self, node: cst.CSTNode) -> None:
        if node in self.wanted:
            self.open.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if node in self.wanted:
            # The whitespace-inclusive range, unless the syntactic one was recorded.
            self.ranges.setdefault(node, (self.open.pop(), self.offset))

    @contextmanager
    def record_syntactic_position(self, node: cst.CSTNode, *,
                                  start_node: Optional[cst.CSTNode] = None,
                                  end_node: Optional[cst.CSTNode] = None) -> Iterator[None]:
        if node not in self.wanted:
            yield
            return
        # A node whose range is hoisted from its children (a block from its first and
        # last statements) needs theirs; they are generated inside this block.
        for child in (start_node, end_node):
            if child is not None:
                self.wanted.add(child)
        start = self.offset
        yield
        end = self.offset
        if start_node is not None:
            start = self.ranges[start_node][0]
        if end_node is not None:
            end = self.ranges[end_node][1]
        self.ranges[node] = (start, end)


def ranges_of(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[cst.CSTNode, CodeRange]:
    """The range of each of `nodes` found in `module` (nodes not in it are left out)."""
    asked = set(nodes)
    if not asked:
        return {}
    state = _Offsets(module, set(asked))
    module._codegen(state)
    code = "".join(state.tokens)
    line_starts = [0] + [m.end() for m in _NEWLINE.finditer(code)]

    def position(offset: int) -> CodePosition:
        line = bisect.bisect_right(line_starts, offset)
        return CodePosition(line, offset - line_starts[line - 1])

    return {node: CodeRange(position(start), position(end))
            for node, (start, end) in state.ranges.items() if node in asked}
