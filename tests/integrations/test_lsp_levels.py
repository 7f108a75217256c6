"""`retainlint server` publishes what `check` shows: info findings (real but negligible) only
when the project's config asks for them with `min-severity`."""

import asyncio
import subprocess

from lsprotocol import types

from test_lsp import opened, session

# RL701: a bound method stored on the module itself, a cycle the collector frees (info)
CYCLE = ("import torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
         "        super().__init__()\n        self.proj = nn.Linear(8, 8)\n        self.act = self.gelu\n\n"
         "    def gelu(self, x):\n        return x\n")


def _published(work, text):
    path = work / "model.py"
    path.write_text(text)

    async def steps(client, published):
        opened(client, path, text)
        return await asyncio.wait_for(published.get(), 120)

    return asyncio.run(session(work, steps))


def _project(tmp_path, config):
    work = tmp_path / "proj"
    work.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    if config:
        (work / "pyproject.toml").write_text(config)
    return work


def test_info_findings_are_not_published_by_default(tmp_path):
    assert list(_published(_project(tmp_path, ""), CYCLE).diagnostics) == []


def test_info_findings_are_published_when_the_config_asks(tmp_path):
    work = _project(tmp_path, '[tool.retainlint]\nmin-severity = "info"\n')
    [d] = _published(work, CYCLE).diagnostics
    assert (d.code, d.severity, d.range.start.line) == ("RL701", types.DiagnosticSeverity.Information, 7)
