"""RL906 graph-kept-across-steps: a training loop adds a value that still carries its autograd
graph (the loss, a model's output) to a total, a list or a preallocated tensor that outlives
the step, so every step's graph stays reachable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional, Sequence, Union

import libcst as cst

from retainlint.analysis.rule import Example, Rule
from retainlint.analysis.walk import children
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl906 import GraphKeptAcrossStepsPrefilter

_Scope = Union[cst.Module, cst.FunctionDef]
_LOOPS = (cst.For, cst.While)
_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)

# What gives a value without autograd history: a number, a copy cut from the graph, an index,
# a comparison's booleans, a tensor's metadata.
_PLAIN_METHODS = frozenset({
    "detach", "item", "tolist", "numpy", "argmax", "argmin", "long", "int", "bool", "size", "dim",
    "numel", "eq", "ne", "gt", "lt", "ge", "le", "isnan", "isinf", "isfinite", "nonzero", "any",
    "all", "data_ptr", "element_size", "zeros_like", "ones_like", "empty_like"})
_PLAIN_ATTRIBUTES = frozenset({"shape", "dtype", "device", "data", "ndim", "requires_grad",
                               "is_cuda", "grad"})
_PLAIN_FUNCTIONS = frozenset({"float", "int", "bool", "len", "str", "repr", "print", "isinstance",
                              "range", "type", "id", "hash", "format"})
# Calls on a model that run no forward pass.
_NOT_FORWARD = frozenset({
    "parameters", "named_parameters", "state_dict", "train", "eval", "zero_grad", "to", "cuda",
    "cpu", "modules", "children", "named_modules", "buffers", "named_buffers", "requires_grad_",
    "load_state_dict", "save_pretrained", "generate", "half", "float", "double", "apply",
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "get_input_embeddings", "get_output_embeddings", "config"})
# Methods whose receiver is a model: the names a function trains.
_MODEL_METHODS = frozenset({"train", "parameters", "named_parameters"})
_MODEL_WORDS = frozenset({"model", "net", "network", "policy", "critic", "actor", "encoder",
                          "decoder", "generator", "discriminator", "classifier"})
_TENSOR_MAKERS = frozenset({"zeros", "ones", "empty", "full", "tensor", "zeros_like", "ones_like",
                            "empty_like", "full_like", "as_tensor"})
# Tensor methods that give a tensor.
_TENSOR_METHODS = frozenset({"mean", "sum", "norm", "float", "half", "to", "cpu", "cuda", "view",
                             "reshape", "squeeze", "unsqueeze", "clone", "abs", "sqrt", "exp", "log",
                             "pow", "max", "min", "flatten", "contiguous"})
_ADDS = frozenset({"append", "extend", "insert", "add", "add_", "copy_", "appendleft"})
_EMPTIES = frozenset({"clear", "zero_", "fill_", "detach_", "pop", "popleft", "popitem"})
_NO_GRAD = ("no_grad", "inference_mode")


@dataclass
class _Write:
    holder: str  # `total_loss`, `self.losses`
    value: cst.BaseExpression  # what is added
    node: cst.CSTNode  # the statement or call that adds it
    statement: cst.CSTNode


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _holder(node: cst.BaseExpression) -> Optional[str]:
    """`total` or `self.total`; through subscripts (`metrics["loss"].append` adds to `metrics`)."""
    while isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return f"self.{node.attr.value}"
    return None


def _walk(node: cst.CSTNode, grad: bool = True) -> Iterator[tuple[cst.CSTNode, bool]]:
    """Every node under `node` with whether autograd records there (False inside `with
    torch.no_grad():`), nested functions and classes left out."""
    for child in children(node):
        if isinstance(child, _NESTED):
            continue
        inner = grad
        if isinstance(child, cst.With) and any(_turns_grad_off(item.item) for item in child.items):
            inner = False
        yield child, inner
        yield from _walk(child, inner)


def _turns_grad_off(expr: cst.BaseExpression) -> bool:
    if not isinstance(expr, cst.Call):
        return False
    last = _code(expr.func).rpartition(".")[2]
    if last in _NO_GRAD:
        return True
    return last == "set_grad_enabled" and bool(expr.args) \
        and isinstance(expr.args[0].value, cst.Name) and expr.args[0].value.value == "False"


def _names(node: cst.CSTNode) -> set[str]:
    return {n.value for n, _ in _walk(node) if isinstance(n, cst.Name)} | (
        {node.value} if isinstance(node, cst.Name) else set())


class _Loop:
    """One loop that calls `.backward()`: what its steps bind, what carries a graph, and
    what they add to holders made before it."""

    def __init__(self, loop: cst.CSTNode, models: set[str]) -> None:
        self.models = models
        self.bound: dict[str, list[cst.BaseExpression]] = {}  # in grad mode
        self.reset: set[str] = set()  # holders emptied or bound afresh in a step
        self.writes: list[_Write] = []
        self.backward: set[str] = set()
        self.steps = False  # an optimizer's `.step()`: each pass is a training step
        self.detached: set[str] = set()  # bound in a step, then their graph entry cut off
        self.tensors: set[str] = set()  # names `.backward()` is called on
        statement: cst.CSTNode = loop
        for node, grad in _walk(loop):
            if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                statement = node
            self._read(node, grad, statement)
        self.graph = self._carriers()

    def _read(self, node: cst.CSTNode, grad: bool, statement: cst.CSTNode) -> None:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            holder = _holder(node.func.value)
            if method == "backward" and grad:
                self.backward |= _names(node)
                # `loss.backward()`, `accelerator.backward(loss)`, `scaler.scale(loss).backward()`:
                # `loss` is a tensor (not `output` in `output["loss"].backward()`)
                containers = {id(n.value) for n, _ in _walk(node)
                              if isinstance(n, (cst.Subscript, cst.Attribute)) and n is not node.func}
                self.tensors |= {n.value for n, _ in _walk(node)
                                 if isinstance(n, cst.Name) and id(n) not in containers}
            elif method == "step":
                self.steps = True
            elif method in _ADDS and holder and node.args and grad:
                self.writes.append(_Write(holder, node.args[-1].value, node, statement))
            elif method in _EMPTIES and holder:
                self.reset.add(holder)
        elif isinstance(node, cst.Assign):
            for target in node.targets:
                self._assign(target.target, node.value, grad, statement, node)
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            self._assign(node.target, node.value, grad, statement, node)
        elif isinstance(node, cst.AugAssign):
            holder = _holder(node.target)
            if holder and grad:
                self.writes.append(_Write(holder, node.value, node, statement))
                if isinstance(node.target, cst.Name):
                    self.bound.setdefault(holder, []).append(node.value)
        elif isinstance(node, cst.Del):
            self.reset |= {h for n, _ in _walk(node) if isinstance(n, (cst.Name, cst.Attribute))
                           for h in [_holder(n)] if h}
        elif isinstance(node, cst.For):
            for name in _names(node.target):
                self.reset.add(name)

    def _assign(self, target: cst.BaseExpression, value: cst.BaseExpression, grad: bool,
                statement: cst.CSTNode, node: cst.CSTNode) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._assign(element.value, value, grad, statement, node)
            return
        holder = _holder(target)
        if holder is None:
            return
        if isinstance(target, cst.Subscript):
            if grad:
                self.writes.append(_Write(holder, value, node, statement))
            if _cut(value) and _mentions(value, holder):
                self.detached.add(holder)  # `output["loss"] = output["loss"].detach()`
            return
        added = _accumulated(holder, value)
        if added is not None and grad:
            self.writes.append(_Write(holder, added, node, statement))
        elif added is None:
            self.reset.add(holder)
        if grad:
            self.bound.setdefault(holder, []).append(value)

    def _carriers(self) -> set[str]:
        """Names bound in a step to a value with a graph: the value `.backward()` is called
        on, what a model computes, and what is computed from those; holders a step adds
        such a value to."""
        graph = set(self.backward) & set(self.bound)
        changed = True
        while changed:
            changed = False
            for name, values in self.bound.items():
                if name not in graph and name not in self.detached and any(self.carries(v, graph) for v in values):
                    graph.add(name)
                    changed = True
            for write in self.writes:
                if write.holder not in graph and self.carries(write.value, graph):
                    graph.add(write.holder)
                    changed = True
        return graph

    def carries(self, expr: cst.CSTNode, graph: set[str]) -> bool:
        """Does `expr` evaluate to something holding autograd history?"""
        if isinstance(expr, cst.Name):
            return expr.value in graph and expr.value not in self.detached
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in _PLAIN_ATTRIBUTES:
                return False
            return _holder(expr) in graph or self.carries(expr.value, graph)
        if isinstance(expr, cst.Call):
            return self._call_carries(expr, graph)
        if isinstance(expr, cst.Subscript):
            return self.carries(expr.value, graph)
        if isinstance(expr, cst.BinaryOperation):
            return self.carries(expr.left, graph) or self.carries(expr.right, graph)
        if isinstance(expr, cst.UnaryOperation):
            return not isinstance(expr.operator, cst.Not) and self.carries(expr.expression, graph)
        if isinstance(expr, cst.IfExp):
            return self.carries(expr.body, graph) or self.carries(expr.orelse, graph)
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            return any(self.carries(e.value, graph) for e in expr.elements)
        if isinstance(expr, cst.Dict):
            return any(isinstance(e, cst.DictElement) and self.carries(e.value, graph)
                       for e in expr.elements)
        if isinstance(expr, cst.Await):
            return self.carries(expr.expression, graph)
        return False  # constants, comparisons, strings, lambdas, comprehensions

    def tensor(self, expr: cst.BaseExpression) -> bool:
        """Is `expr` known to be a tensor (so `.detach()` applies), not a dict or a list?"""
        if isinstance(expr, cst.Name):
            return expr.value in self.tensors
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            # `x.mean()` of a value with a graph: only a tensor has both
            return expr.func.attr.value in _TENSOR_METHODS and self.carries(expr.func.value, self.graph)
        if isinstance(expr, cst.BinaryOperation):
            return self.tensor(expr.left) or self.tensor(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return self.tensor(expr.expression)
        return False

    def _call_carries(self, call: cst.Call, graph: set[str]) -> bool:
        func = call.func
        if isinstance(func, cst.Name) and func.value in _PLAIN_FUNCTIONS:
            return False
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in _PLAIN_METHODS:
                return False
            receiver = _code(func.value)
            if receiver in self.models:
                return method not in _NOT_FORWARD
            if self.carries(func.value, graph):
                return True
        elif _code(func) in self.models:
            return True  # `model(x)`
        return any(self.carries(a.value, graph) or _code(a.value) in self.models for a in call.args)


def _accumulated(holder: str, value: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`total = total + v` (or `v + total`, `0.9 * total + 0.1 * v`): the operand added to
    the holder's old value; None when the holder is bound afresh."""
    if not isinstance(value, cst.BinaryOperation):
        return None
    for own, other in ((value.left, value.right), (value.right, value.left)):
        if _mentions(own, holder):
            return other
    return None


def _cut(value: cst.BaseExpression) -> bool:
    """`x.detach()`, `x.item()`: a value cut from its graph."""
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
        and value.func.attr.value in _PLAIN_METHODS


def _mentions(expr: cst.BaseExpression, holder: str) -> bool:
    return any(_holder(n) == holder for n, _ in _walk(expr) if isinstance(n, (cst.Name, cst.Attribute))) \
        or _holder(expr) == holder


def _scope_body(scope: _Scope) -> Sequence[cst.CSTNode]:
    if isinstance(scope, cst.Module):
        return [s for s in scope.body if not isinstance(s, _NESTED)]
    return [scope.body]


def _models(nodes: Sequence[cst.CSTNode]) -> set[str]:
    """What a scope (its `nodes`) trains: receivers of `.train()`, `.parameters()`; names
    that say so."""
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value in _MODEL_METHODS and _holder(node.func.value):
            found.add(_code(node.func.value))
        elif isinstance(node, (cst.Name, cst.Attribute)) and _says_model(node):
            found.add(_code(node))
    return found


def _says_model(node: cst.BaseExpression) -> bool:
    """`model`, `ref_model`, `self.text_encoder`: the last word names a model (not `model_config`)."""
    holder = _holder(node)
    if holder is None or isinstance(node, cst.Subscript):
        return False
    last = holder.rpartition(".")[2].rpartition("_")[2]
    return last.lower() in _MODEL_WORDS


class GraphKeptAcrossSteps(Rule):
    prefilter = GraphKeptAcrossStepsPrefilter
    name = "graph-kept-across-steps"
    summary = ("A training loop adds the loss (or a model's output) to a total, a list or a tensor made "
               "before the loop: every step's autograd graph stays reachable")
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE

    docs = """
## What it does
Reports, in a training loop (one that calls `.backward()` and an optimizer's `.step()`),
a value that still carries its autograd graph - the loss, what a model computed, or
anything computed from those outside `torch.no_grad()` - added to something made before
the loop and never reset in it: `total_loss += loss`, `losses.append(loss)`, `metrics[i] =
loss` into a tensor made with `torch.zeros(...)`, `ema = 0.9 * ema + 0.1 * loss`. Not reported: `.item()`, `.detach()`, comparisons and
indices (`argmax`), a holder bound afresh or emptied in each step (gradient accumulation's
`running_loss = 0` after the optimizer step), a holder that `.backward()` is itself called
on, and writes under `torch.no_grad()`.

Severity: a warning.

## Why it leaks
Adding a tensor that requires grad to another records the addition in the graph: the
total's `grad_fn` points at this step's graph, whose nodes point at the previous step's,
and so on. `backward()` frees the tensors each graph saved, not the graph itself, so the
nodes of every step (and every output a list keeps) stay reachable from the total until it
goes - the PyTorch FAQ's "accumulating history across your training loop".

## Example
```python
def train(model, loader, optimizer):
    model.train()
    total_loss = 0
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        total_loss += loss  # RL906: each step's graph is chained onto total_loss
    return total_loss / len(loader)
```

## Fix
Add the value without its graph: `loss.detach()` (a tensor, same device and value). The
fix is unsafe where the holder leaves the function (returned, a parameter, an attribute):
whoever gets it could differentiate through it.
"""

    valid = [
        # the number, not the tensor
        """
def train(model, loader, optimizer):
    model.train()
    total_loss = 0.0
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
    return total_loss
""",
        # gradient accumulation: reset after each optimizer step
        """
def train(model, loader, optimizer):
    running_loss = 0
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        running_loss += loss
        if step % 4 == 3:
            running_loss.backward()
            optimizer.step()
            running_loss = 0
""",
        # bookkeeping under no_grad
        """
import torch

def train(model, loader, optimizer):
    losses = torch.zeros(8)
    for i, batch in enumerate(loader):
        loss = model(batch).mean()
        loss.backward()
        with torch.no_grad():
            losses[i % 8] = loss
""",
        # not a training loop: the outputs of one batch's chunks, joined after it
        """
import torch

def tiled(fn, x, shards):
    outputs = []
    for chunk in torch.chunk(x, shards):
        output = fn(chunk)
        torch.autograd.backward(output)
        outputs.append(output)
    return torch.cat(outputs)
""",
        # the labels are data, predictions an index
        """
def train(model, loader, optimizer, criterion):
    labels_seen, predictions = [], []
    for inputs, labels in loader:
        logits = model(inputs)
        loss = criterion(logits, labels)
        loss.backward()
        labels_seen.append(labels)
        predictions.append(logits.argmax(-1))
""",
    ]
    invalid = [
        Example(
            """
def train(model, loader, optimizer):
    model.train()
    total_loss = 0
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        total_loss += loss
    print(total_loss / len(loader))
""",
            lines=[9],
            fixed="""
def train(model, loader, optimizer):
    model.train()
    total_loss = 0
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        total_loss += loss.detach()
    print(total_loss / len(loader))
""",
        ),
        Example(
            """
import torch

def train(model, loader, accelerator, optimizer, n):
    losses = torch.zeros(n)
    rewards = []
    for i, batch in enumerate(loader):
        reward = get_reward(model, batch)
        loss = -reward.mean()
        accelerator.backward(loss)
        optimizer.step()
        losses[i % n] = loss
        rewards.append(reward.mean())
""",
            lines=[12, 13],
            fixed="""
import torch

def train(model, loader, accelerator, optimizer, n):
    losses = torch.zeros(n)
    rewards = []
    for i, batch in enumerate(loader):
        reward = get_reward(model, batch)
        loss = -reward.mean()
        accelerator.backward(loss)
        optimizer.step()
        losses[i % n] = loss.detach()
        rewards.append(reward.mean().detach())
""",
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        self._scan(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not any(_turns_grad_off(d.decorator) for d in node.decorators):
            self._scan(node)

    def _scan(self, scope: _Scope) -> None:
        walked = [(n, grad) for block in _scope_body(scope) for n, grad in _walk(block)]
        loops = [n for n, grad in walked if isinstance(n, _LOOPS) and grad]
        if not loops:
            return
        nodes = [n for n, _ in walked]
        models = _models(nodes)
        differentiated: set[str] = set()  # what `.backward()` is called on anywhere in the scope
        for n in nodes:
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "backward":
                differentiated |= _names(n) | {h for x, _ in _walk(n) if isinstance(x, cst.Attribute)
                                               for h in [_holder(x)] if h}
        reported: set[int] = set()
        for loop in loops:
            step = _Loop(loop, models)
            if not (step.backward and step.steps):
                continue  # not a training loop (a forward over a batch's chunks, say)
            made_before = _bound_outside(scope, nodes, loop)
            for write in step.writes:
                if id(write.node) in reported or write.holder in step.reset \
                        or write.holder in differentiated or not made_before.holds(write.holder) \
                        or not step.carries(write.value, step.graph):
                    continue
                if isinstance(write.node, cst.Assign) and isinstance(write.node.targets[0].target, cst.Subscript) \
                        and not made_before.tensor(write.holder):
                    continue  # a dict or a list entry replaced, not a tensor written in place
                reported.add(id(write.node))
                self._report(scope, write, step.tensor(write.value))

    def _report(self, scope: _Scope, write: _Write, tensor: bool) -> None:
        """`tensor`: the value added is known to be a tensor, so `.detach()` is its fix."""
        where = f"`{scope.name.value}()`" if isinstance(scope, cst.FunctionDef) else "the module"
        added = _code(write.value)
        leaves = write.holder.startswith("self.") or isinstance(scope, cst.Module) \
            or _leaves(scope, write.holder)
        lifetime = ("as long as the instance" if write.holder.startswith("self.")
                    else "the process" if isinstance(scope, cst.Module)
                    else f"as long as `{write.holder}` lives in {where}")
        detached = _detached_code(write.value)
        message = (f"`{added}` still carries its autograd graph and is added to `{write.holder}`, made before "
                   f"this training loop and never reset in it: every step's graph stays reachable from "
                   f"`{write.holder}` for {lifetime}; add "
                   + (f"`{detached}` (or `.item()` for a number)" if tensor
                      else f"`{added}`'s tensors detached (`.detach()`) or as numbers (`.item()`)"))
        fix = self.fix(f"Add `{detached}`: the value without its graph",
                       {write.value: _detached(write.value)},
                       applicability=Applicability.UNSAFE if leaves else Applicability.SAFE) if tensor else None
        self.report(write.node, message, statement=write.statement, fix=fix,
                    consequence=Consequence(f"the autograd graph of every step (`{added}`)",
                                            f"`{write.holder}`", lifetime, "one graph per step"))


def _bound_outside(scope: _Scope, nodes: Sequence[cst.CSTNode], loop: cst.CSTNode) -> "_MadeBefore":
    """Holders made before `loop` (or handed in), from the scope's `nodes`."""
    inside = {id(n) for n, _ in _walk(loop)} | {id(loop)}
    made = _MadeBefore()
    if isinstance(scope, cst.FunctionDef):
        for param in (*scope.params.posonly_params, *scope.params.params, *scope.params.kwonly_params):
            made.names[param.name.value] = False
        made.method = "self" in made.names
    for node in nodes:
        if id(node) in inside or not isinstance(node, (cst.Assign, cst.AnnAssign)) or node.value is None:
            continue
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        for target in targets:
            elements = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) \
                else [target]
            values = [e.value for e in node.value.elements] \
                if isinstance(node.value, (cst.Tuple, cst.List)) and len(elements) > 1 \
                and len(node.value.elements) == len(elements) else [node.value] * len(elements)
            for element, value in zip(elements, values):
                holder = _holder(element)
                if holder is not None and not isinstance(element, cst.Subscript):
                    made.names[holder] = made.names.get(holder, False) or _tensor_made(value)
    return made


class _MadeBefore:
    """Holders made before a loop: names bound outside it (-> made by a torch tensor maker)
    and, in a method, any attribute of `self`."""

    def __init__(self) -> None:
        self.names: dict[str, bool] = {}
        self.method = False

    def holds(self, holder: str) -> bool:
        return holder in self.names or (self.method and holder.startswith("self."))

    def tensor(self, holder: str) -> bool:
        return self.names.get(holder, False)


def _tensor_made(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Call) and _code(value.func).rpartition(".")[2] in _TENSOR_MAKERS \
        and _code(value.func).startswith(("torch.", "zeros", "ones", "empty", "full"))


def _leaves(fn: cst.FunctionDef, holder: str) -> bool:
    """Does the holder leave the function: a parameter, returned or yielded?"""
    params = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}
    if holder in params:
        return True
    return any(isinstance(n, (cst.Return, cst.Yield)) and n.value is not None and holder in _names(n.value)
               for n, _ in _walk(fn.body))


def _detached(value: cst.BaseExpression) -> cst.BaseExpression:
    simple = isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or value.lpar
    receiver = value if simple else value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name("detach")))


def _detached_code(value: cst.BaseExpression) -> str:
    return _code(_detached(value))
