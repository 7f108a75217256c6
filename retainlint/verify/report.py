"""Verdicts and output of `retainlint verify` (no torch here)."""

from __future__ import annotations

import textwrap
from typing import Any, Optional

from rich.cells import cell_len

from retainlint.verify.probe import MiB, REPRODUCED_SHARE, tolerance_bytes

FREED, NOT_REPRODUCED, INEFFECTIVE, ERROR = "freed", "not reproduced", "fix ineffective", "error"


def verdict(before: dict, after: dict) -> str:
    """`freed`: the buggy run retains >= 90 % of the target's bytes (a positive control) and
    the fixed run frees it (dead, about 0 bytes). `not reproduced`: the buggy run did not
    retain. `fix ineffective`: the fixed run still retains."""
    if before.get("error") or after.get("error"):
        return ERROR
    target = before.get("target_bytes") or 0
    if target <= 0:
        return ERROR
    if before["retained_bytes"] < REPRODUCED_SHARE * target:
        return NOT_REPRODUCED
    if after["alive"] or after["retained_bytes"] > tolerance_bytes(target):
        return INEFFECTIVE
    return FREED


def _side(r: dict) -> dict:
    holder = r.get("holder") or None
    return {
        "alive": r.get("alive"),
        "retained_bytes": r.get("retained_bytes"),
        "scan_bytes": r.get("scan_bytes"),
        "cuda_bytes": r.get("cuda_bytes"),
        "rss_delta_bytes": r.get("rss_delta_bytes"),
        "holder": holder["chain"] if holder else None,
        "holder_rule": holder["rule"] if holder else None,
        "holder_finding": holder.get("finding") if holder else None,
        "seconds": (r.get("seconds") or {}).get("total"),
        "error": r.get("error"),
    }


def row(scenario, fix: str, model: str, repeat: int, before: dict, after: dict) -> dict:
    v = verdict(before, after)
    b, a = _side(before), _side(after)
    # The holder that explains the verdict: what the fix failed to release, or what the bug
    # held (and the fix released).
    if v == INEFFECTIVE:
        holder, holder_rule, finding = a["holder"], a["holder_rule"], a["holder_finding"]
    elif v == FREED:
        holder, holder_rule, finding = b["holder"], b["holder_rule"], b["holder_finding"]
    else:
        holder, holder_rule, finding = None, None, None
    return {
        "rule": scenario.rule,
        "scenario": scenario.name,
        "model": model,
        "device": before.get("device") or after.get("device"),
        "probe": before.get("probe") or after.get("probe"),
        "fix": fix,
        "repeat": repeat,
        "target_bytes": before.get("target_bytes") or after.get("target_bytes"),
        "before": b,
        "after": a,
        "verdict": v,
        "holder": holder,
        "holder_rule": holder_rule,
        "holder_finding": finding,  # where the linter reports that rule (file:line), if it does
    }


def _mib(n: Optional[int]) -> str:
    return "-" if n is None else f"{n / MiB:.1f}"


def _yn(x: Any) -> str:
    return "-" if x is None else ("yes" if x else "no")


def _key(r: dict) -> tuple:
    return (r["before"]["alive"], r["before"]["retained_bytes"], r["after"]["alive"],
            r["after"]["retained_bytes"], r["verdict"], r["holder"])


def grouped(rows: list[dict]) -> list[tuple[dict, str]]:
    """One line per scenario when all repeats agree, else one per repeat."""
    out: list[tuple[dict, str]] = []
    order: dict[tuple, list] = {}
    for r in rows:
        order.setdefault((r["rule"], r["scenario"], r["model"]), []).append(r)
    for group in order.values():
        n = len(group)
        if len({_key(r) for r in group}) == 1:
            out.append((group[0], f"{n}/{n} identical" if n > 1 else "1"))
        else:
            for r in group:
                out.append((r, f"run {r['repeat']} of {n} (differs)"))
    return out


VERDICT_STYLE = {FREED: "bold green", NOT_REPRODUCED: "bold yellow", INEFFECTIVE: "bold red", ERROR: "bold red"}
TITLE = "retainlint verify: memory each bug holds after teardown, and after its fix"


def wrapped(pieces: list[str], inline: str, first: str, indent: str, width: Optional[int],
            lead: str = "") -> list[str]:
    """`first` then `pieces` joined by `inline`, broken between two pieces wherever the
    next would pass `width` (None: one line). A broken line starts with `indent` and
    `lead` (`-> ` for a holder chain); a label (`first`) that leaves no room keeps a line
    of its own; a piece longer than a whole line is broken at its spaces."""
    if not pieces:
        return [first]
    lines = [first + pieces[0]]
    if width is not None and cell_len(lines[0]) > width and first.strip():
        lines = [first.rstrip(), indent + pieces[0]]
    for piece in pieces[1:]:
        joined = lines[-1] + inline + piece
        if width is None or cell_len(joined) <= width:
            lines[-1] = joined
        else:
            lines.append(indent + lead + piece)
    if width is None:
        return lines
    return [part for line in lines for part in (
        [line] if cell_len(line) <= width else
        textwrap.wrap(line, width, subsequent_indent=indent + "  ", break_long_words=False,
                      break_on_hyphens=False))]


def _chain_lines(label: str, chain: str, rule: str, width: Optional[int]) -> list[str]:
    pieces = chain.split(" -> ")
    pieces[-1] += rule  # the finding stays beside the object it is about
    return wrapped(pieces, " -> ", label, "      ", width, lead="-> ")


def _prose(text: str, indent: str, width: Optional[int]) -> list[str]:
    return wrapped(text.split(" "), " ", indent, indent, width)


def text(console, rows: list[dict], width: Optional[int] = None) -> None:
    """One block per scenario: `RULE scenario: verdict` on a line of its own, then its
    figures and who held the model, each wrapped to `width` (the terminal's; None when
    piped: a chain stays on one line for grep)."""
    from rich.text import Text

    def out(line: str) -> None:
        console.print(line, soft_wrap=True, highlight=False, markup=False)

    models = sorted({r["model"] for r in rows})
    devices = sorted({r["device"] or "-" for r in rows})
    for line in _prose(TITLE, "", width):
        console.print(line, style="bold", soft_wrap=True, highlight=False, markup=False)
    for line in _prose(f"model {', '.join(models)} on {', '.join(devices)}; retained = "
                       f"{_probe_words(rows)}.", "", width):
        out(line)
    for r, runs in grouped(rows):
        out("")
        console.print(Text.assemble(f"{r['rule']} {r['scenario']}: ",
                                    (r["verdict"], VERDICT_STYLE.get(r["verdict"], ""))), soft_wrap=True)
        figures = [f"fix: {r['fix']}", f"runs: {runs}", f"model {_mib(r['target_bytes'])} MiB",
                   f"retained {_mib(r['before']['retained_bytes'])} MiB before, "
                   f"{_mib(r['after']['retained_bytes'])} after",
                   f"alive {_yn(r['before']['alive'])} / {_yn(r['after']['alive'])}"]
        for line in wrapped(figures, "; ", "  ", "  ", width):
            out(line)
        if r["verdict"] == ERROR:
            err = r["before"]["error"] or r["after"]["error"] or "the scenario named nothing to free"
            for line in _prose(f"error: {err.strip().splitlines()[-1]}", "  ", width):
                out(line)
            continue
        side = "fixed run" if r["verdict"] == INEFFECTIVE else "buggy run"
        rule = f"  [{r['holder_rule']}" + (f", {r['holder_finding']}" if r.get("holder_finding") else "") + "]" \
            if r["holder_rule"] else ""
        for line in _chain_lines(f"  Who held it ({side}): ", r["holder"] or "-", rule, width):
            out(line)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    out("")
    for line in _prose(f"{len(rows)} run pair(s): {summary}. RSS is reported in --output-format json "
                       "only, never judged.", "", width):
        out(line)


def _probe_words(rows: list[dict]) -> str:
    if rows and rows[0]["probe"] == "cuda_memory_allocated":
        return "CUDA memory_allocated delta"
    return "bytes of the tracked tensor storages still alive"


# -- --target: the user's own object -------------------------------------------------------------
RETAINED = "retained"


def target_row(target: str, release: Optional[str], repeat: int, result: dict) -> dict:
    """`freed`: the object is dead and its tensors too (within the CUDA tolerance);
    `retained`: something still holds it; `error`: the import, the factory or the release
    failed."""
    side = _side(result)
    target_bytes = result.get("target_bytes") or 0
    if result.get("error"):
        verdict = ERROR
    elif side["alive"] or (side["retained_bytes"] or 0) > tolerance_bytes(target_bytes):
        verdict = RETAINED
    else:
        verdict = FREED
    kinds = [t["kind"] for t in result.get("targets") or ()]
    return {
        "target": target, "release": release, "repeat": repeat,
        "object": kinds[0] if kinds else None,
        "device": result.get("device"), "probe": result.get("probe"),
        "target_bytes": result.get("target_bytes"),
        **{k: side[k] for k in ("alive", "retained_bytes", "scan_bytes", "cuda_bytes", "error")},
        "verdict": verdict,
        "holder": side["holder"] if verdict == RETAINED else None,
        "holder_rule": side["holder_rule"] if verdict == RETAINED else None,
        "holder_finding": side["holder_finding"] if verdict == RETAINED else None,
    }


def target_text(console, rows: list[dict]) -> None:
    first = rows[0]
    after = f"after {first['release']}()" if first["release"] else "after it was dropped"
    same = len({(r["verdict"], r["retained_bytes"], r["holder"]) for r in rows}) == 1
    for r in rows[:1] if same else rows:
        runs = f"{len(rows)}/{len(rows)} runs identical" if same and len(rows) > 1 else f"run {r['repeat']}"
        if r["verdict"] == ERROR:
            last = (r["error"] or "").strip().splitlines()[-1:] or ["?"]
            console.print(f"{r['target']}: error: {last[0]} ({runs})", markup=False)
            continue
        probe = "CUDA memory_allocated" if r["probe"] == "cuda_memory_allocated" else "tensor storage"
        what = f"{r['object']} on {r['device']}, {_mib(r['target_bytes'])} MiB of tensors"
        if r["verdict"] == FREED:
            console.print(f"{r['target']}: freed {after}: {what}; 0.0 MiB left ({probe}) ({runs})", markup=False)
            continue
        console.print(f"{r['target']}: still held {after}: {what}, {_mib(r['retained_bytes'])} MiB retained "
                      f"({probe}), object {'alive' if r['alive'] else 'dead'} ({runs})", markup=False)
        rule = f"  [{r['holder_rule']}" + (f", {r['holder_finding']}" if r["holder_finding"] else "") + "]" \
            if r["holder_rule"] else ""
        console.print(f"  held by: {r['holder'] or '-'}{rule}", markup=False)
