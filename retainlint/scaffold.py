"""Start a new rule: `python -m retainlint.scaffold RL9xx rule-name --call module.function`.

Writes a working rule that reports every call to `--call` (the shape to grow from), its
prefilter and a fixture: `rules/rl9xx_rule_name.py`, `rules/prefilters/rl9xx.py`,
`fixtures/RL9xx/basic.py`. The rule passes the test suite as it is; CONTRIBUTING.md
says what to do next. Refuses to overwrite anything."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

RULE = '''"""{code} {name}."""

from __future__ import annotations

import libcst as cst

from retainlint.analysis.rule import Example, Rule
from retainlint.core.finding import Applicability, Severity
from retainlint.rules.prefilters.{module} import {cls}Prefilter


class {cls}(Rule):
    prefilter = {cls}Prefilter
    name = "{name}"
    summary = "A call to `{call}` keeps what it is given alive"
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports calls to `{call}`, however it is imported.

## Why it leaks
Say what the call keeps, who keeps it, and until when.

## Example
```python
import {call_module}

{call_module}.{call_name}(model)
```
"""

    valid = [
        "import {call_module}\\n\\n{call_module}.something_else(model)\\n",
    ]
    invalid = [
        Example("import {call_module}\\n\\n{call_module}.{call_name}(model)\\n", lines=[3]),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) == "{call}":
            self.report(node, "`{call}(...)` keeps its arguments alive")
'''

PREFILTER = '''"""{code}'s prefilter: which files are worth parsing with libcst for the rule in
`rules/{module}_{stem}.py` (from the file's bytes; no libcst here)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter


class {cls}Prefilter(Prefilter):
    code = "{code}"

    # A file without one of these is never parsed for the rule.
    triggers = ("{call_name}",)
'''

FIXTURE = '''import {call_module} as alias
from {call_module} import {call_name}


def keep(model):
    alias.{call_name}(model)  # expect: {code}
    {call_name}(model)  # expect: {code}
    alias.other(model)
'''


def scaffold(root: Path, code: str, name: str, call: str) -> list[Path]:
    if not re.fullmatch(r"RL\d{3}", code):
        raise ValueError(f"{code}: a code is RL and three digits (RL901)")
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name):
        raise ValueError(f"{name}: a name is lower-case words joined by '-'")
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", call):
        raise ValueError(f"{call}: --call is a qualified function name (module.function)")
    module, stem = code.lower(), name.replace("-", "_")
    call_module, call_name = call.rsplit(".", 1)
    values = dict(code=code, name=name, call=call, module=module, stem=stem,
                  call_module=call_module, call_name=call_name,
                  cls="".join(w.capitalize() for w in name.split("-")))
    files = {
        root / "rules" / f"{module}_{stem}.py": RULE,
        root / "rules" / "prefilters" / f"{module}.py": PREFILTER,
        root / "fixtures" / code / "basic.py": FIXTURE,
    }
    taken = [p for p in files if p.exists()] + list((root / "rules").glob(f"{module}_*.py"))
    if taken:
        raise ValueError(f"{taken[0]}: already exists")
    for path, template in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(**values))
    return list(files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("code", help="RL9xx")
    parser.add_argument("name", help="rule-name, lower-case words joined by '-'")
    parser.add_argument("--call", required=True, help="the qualified function the rule starts from")
    parser.add_argument("--root", type=Path, default=Path.cwd(),
                        help="the checkout (default: the current directory)")
    args = parser.parse_args(argv)
    try:
        written = scaffold(args.root, args.code, args.name, args.call)
    except ValueError as e:
        print(f"retainlint.scaffold: error: {e}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    print("next: CONTRIBUTING.md, 'Adding a rule'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
