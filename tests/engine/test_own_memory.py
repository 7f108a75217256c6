"""What a run keeps between files: a process checking thousands of files must not keep
each file's context or tree (in the same process, as a language server or a pool worker
does)."""

import gc
import weakref

import libcst as cst

from retainlint.analysis.walk import visit
from retainlint.project.index import SOURCES_KEPT, ProjectIndex


class FileState:
    """Stands for a file's context: what a rule's local visitor closes over."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module


def test_a_visitor_class_made_per_call_is_not_kept_with_what_it_closes_over():
    def count_calls(state: FileState) -> tuple[int, weakref.ref]:
        class Calls(cst.CSTVisitor):
            n = 0

            def visit_Call(self, node: cst.Call) -> None:
                Calls.n += state.module is not None

        visit(state.module, Calls())
        return Calls.n, weakref.ref(Calls)

    state = FileState(cst.parse_module("f(g(1))\n"))
    n, cls = count_calls(state)
    kept = weakref.ref(state)
    del state
    gc.collect()
    assert n == 2
    assert cls() is None and kept() is None


def test_other_files_read_again_after_many_others_give_the_same_tree(tmp_path):
    paths = []
    for i in range(SOURCES_KEPT + 3):
        path = tmp_path / f"m{i}.py"
        path.write_text(f"class C{i}:\n    pass\n")
        paths.append(str(path))
    index = ProjectIndex([])
    first = [index.source(p) for p in paths]
    assert all(found is not None for found in first)
    again = index.source(paths[0])  # read and parsed anew: the index kept the later ones
    assert again is not None and again[1] == first[0][1]
    assert [n.name for n in again[0].body] == ["C0"]
    assert index.source(paths[-1]) is index.source(paths[-1])
