"""`retainlint.engine.positions.ranges_of` gives, for any node, the range libcst's
PositionProvider gives it, while generating the code once for only the nodes asked for
(and, given the file's text, only as far as the last of them)."""

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from retainlint.engine.positions import ranges_of

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*ROOT.glob("fixtures/RL*/**/*.py"), *ROOT.glob("retainlint/*.py")])

ODD = {
    "crlf": "class A:\r\n    def f(self):\r\n        x = [1,\r\n             2]  # c\r\n\r\n        return x\r\n",
    "no trailing newline": "import gc\ngc.freeze()",
    "cr only": "a = 1\rb = (a +\r     2)\r",
    "tabs and semicolons": "if x:\n\ty = 1; z = 2\n\tdef g(): return (\n\t\t3)\n",
    "decorators and comments": "# head\n\n@a.b(1)\n# between\n@c\nasync def f(\n    x,  # arg\n):\n    '''doc'''\n    async with a as b, c:\n        pass\n",
    "empty": "",
    "only comments, no trailing newline": "# a\n# b",
}


def _all_nodes(module: cst.Module) -> list[cst.CSTNode]:
    found, stack = [], [module]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.children)
    return found


def _compare(module: cst.Module) -> None:
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = _all_nodes(module)
    assert ranges_of(module, nodes) == {n: expected[n] for n in nodes}
    assert ranges_of(module, nodes, module.code) == {n: expected[n] for n in nodes}
    assert ranges_of(module, []) == {}
    # One node at a time: a range must not depend on which other nodes were asked for,
    # nor on where the code generation stopped.
    for node in nodes[:: max(1, len(nodes) // 8)]:
        assert ranges_of(module, [node]) == {node: expected[node]}
        assert ranges_of(module, [node], module.code) == {node: expected[node]}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_same_ranges_as_libcst(path):
    _compare(cst.parse_module(path.read_bytes()))


@pytest.mark.parametrize("name", sorted(ODD))
def test_same_ranges_on_odd_layouts(name):
    _compare(cst.parse_module(ODD[name]))


def test_nodes_of_another_module_are_left_out():
    module = cst.parse_module("x = 1\n")
    other = cst.parse_module("y = 2\n").body[0]
    assert ranges_of(module, [other]) == {}
    assert ranges_of(module, []) == {}


def test_text_libcst_does_not_keep_falls_back_to_its_code():
    # libcst drops a leading form feed: offsets must count the code it generates.
    source = "\x0cimport gc\n\ndef f():\n    gc.freeze()\n"
    module = cst.parse_module(source)
    assert module.code != source
    call = module.body[1].body.body[0]
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)[call]
    assert ranges_of(module, [call], source) == {call: expected}
