"""Names of torch's hook registrations, and finding them in a file's `ast` (no libcst:
the prefilters use them)."""

from __future__ import annotations

import ast
from typing import Optional


# Process-wide registries (reached as `torch....<name>`): a GC root.
GLOBAL_HOOKS = frozenset(
    {
        "register_bytecode_hook",
        "register_module_forward_hook",
        "register_module_forward_pre_hook",
        "register_module_full_backward_hook",
        "register_module_full_backward_pre_hook",
        "register_module_buffer_registration_hook",
        "register_module_module_registration_hook",
        "register_module_parameter_registration_hook",
    }
)

# Hooks stored inside the object they are registered on (RL501's opt-in list).
PER_OBJECT_HOOKS = frozenset(
    {
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_backward_hook",
        "register_state_dict_pre_hook",
        "register_load_state_dict_post_hook",
        "register_hook",
        "register_post_accumulate_grad_hook",
        "register_step_pre_hook",
        "register_step_post_hook",
    }
)


# The dict each hook on an object is kept in (a tensor's `register_hook` may also be a graph
# node's, kept in C++: no name given).
_HOOK_DICTS = {
    "register_forward_hook": "_forward_hooks",
    "register_forward_pre_hook": "_forward_pre_hooks",
    "register_full_backward_hook": "_backward_hooks",
    "register_full_backward_pre_hook": "_backward_pre_hooks",
    "register_backward_hook": "_backward_hooks",
    "register_state_dict_pre_hook": "_state_dict_pre_hooks",
    "register_load_state_dict_post_hook": "_load_state_dict_post_hooks",
    "register_post_accumulate_grad_hook": "_post_accumulate_grad_hooks",
    "register_step_pre_hook": "_optimizer_step_pre_hooks",
    "register_step_post_hook": "_optimizer_step_post_hooks",
}


def hooks_of(hooked: str, hook: str) -> str:
    """What holds a hook registered on an object (a consequence's holder): `hooked`'s
    hook dict for `hook`."""
    held = _HOOK_DICTS.get(hook)
    return f"the hooks of `{hooked}`" + (f" (its `{held}`)" if held else "")


# `nn.Module` / optimizer state-dict hooks (public and the older private spellings).
STATE_DICT_HOOKS = frozenset(
    {
        "register_state_dict_pre_hook",
        "register_state_dict_post_hook",
        "register_load_state_dict_pre_hook",
        "register_load_state_dict_post_hook",
        "_register_state_dict_hook",
        "_register_load_state_dict_pre_hook",
    }
)

# Hooks kept by autograd in C++ (a tensor's or a graph node's hook list): the Python
# cycle collector cannot see through them.
AUTOGRAD_HOOKS = frozenset({"register_hook", "register_prehook", "register_post_accumulate_grad_hook"})

# Every registration that returns a `RemovableHandle`.
HANDLE_HOOKS = GLOBAL_HOOKS | PER_OBJECT_HOOKS | STATE_DICT_HOOKS | AUTOGRAD_HOOKS | frozenset(
    {
        "register_multi_grad_hook",
        "register_module_backward_hook",
        "register_optimizer_step_pre_hook",
        "register_optimizer_step_post_hook",
    }
)


def ast_hook_name(call: ast.Call) -> Optional[str]:
    """`hook_name` on the ast."""
    func = call.func
    if type(func) is ast.Attribute:
        return func.attr if func.attr in HANDLE_HOOKS else None
    if type(func) is ast.Name:
        return func.id if func.id in HANDLE_HOOKS else None
    return None


def ast_registrations(nodes) -> list[ast.Call]:
    """The hook registrations of a file (`FileNodes`), kept on `nodes` for both rules."""
    return nodes.shared("hook registrations", lambda nodes: [
        c for c in nodes.of(ast.Call) if ast_hook_name(c) is not None
    ] if b"hook" in nodes.source else [])  # every registration's name ends so


