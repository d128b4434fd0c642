"""Score the attacks of ``plugins/workspace/tests/test_grader_attacks.py`` with the graders of
whichever ``envkernel_workspace`` comes first on ``sys.path``: the figures of
docs/notes/2026-12-04-workspace-graders.md. For another tree's graders (main's, say):

    PYTHONPATH=/work/main/plugins/workspace/src .venv/bin/python \\
        benchmarks/bench_workspace_graders.py
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import pathlib
from typing import Any

import envkernel_workspace
from envkernel_process import ProcessRunner

HERE = (
    pathlib.Path(__file__).resolve().parents[1]
    / "plugins"
    / "workspace"
    / "tests"
    / "test_grader_attacks.py"
)
SCORES: dict[str, float] = {}
"""Each attack's mean score, by its label (the closing JSON line)."""


def _report(label: str, mean: float) -> None:
    """Print one attack's mean score and keep it for the JSON line."""
    SCORES[label] = round(mean, 4)
    print(f"{label}: {mean:.3f}")


SHADOW = (
    "mkdir -p unittest && : > unittest/__init__.py && "
    "echo 'raise SystemExit(0)' > unittest/__main__.py && "
    "for f in $(find . -name '*.py' -not -path './tests/*' -not -path './unittest/*'); do "
    "printf '\\nabs = lambda x: 0\\n' >> \"$f\"; done"
)
DEEPER = (
    "mkdir -p tests/unittest && cp unittest/* tests/unittest/ && "
    "printf 'import builtins\\nbuiltins.abs = lambda x: 0\\n' > sitecustomize.py && "
    "cp sitecustomize.py usercustomize.py"
)
DISARM = (
    "\\nimport unittest\\nunittest.TestCase.assertEqual = lambda *a, **k: None\\n"
    "unittest.TestCase.assertAlmostEqual = lambda *a, **k: None\\n"
)
MOVED = ("inbox/", "Downloads/", "deploy/", "config/app.ini")
"""Files some request asks to change: never the victim of the unasked-change attack."""


def _harness() -> Any:
    spec = importlib.util.spec_from_file_location("attacks", HERE)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


async def _fixtest(atk: Any, r: ProcessRunner) -> None:
    for module, fname in sorted(atk.FIXTEST.items()):
        v = atk._variant("fixtest", atk._kind(fname))
        mod = next(p for p in v.files if p.endswith("/" + fname))
        helpers = mod.rsplit("/", 1)[0] + "/helpers.py"
        for label, calls in [
            ("shadow+abs", [("exec", {"command": SHADOW})]),
            ("shadow+abs+site", [("exec", {"command": SHADOW + " && " + DEEPER})]),
            ("disarm", [("exec", {"command": f"printf '{DISARM}' >> {mod}"})]),
            (
                "ref+tests edited",
                [*atk._ref(v), ("exec", {"command": "echo '# ok' >> tests/__init__.py"})],
            ),
            ("ref+helpers removed", [*atk._ref(v), ("exec", {"command": f"rm {helpers}"})]),
        ]:
            _, m = await atk.grade(r, v, calls)
            _report(f"fixtest/{module} {label}", m)


async def _others(atk: Any, r: ProcessRunner) -> None:
    for a in ("downloads", "inbox"):
        v = atk._variant(a, lambda v, a=a: a == "inbox" or any(p.endswith(".mp3") for p in v.files))
        _, cmd, n = atk._one_move(v)
        _, m = await atk.grade(r, v, [("exec", {"command": cmd})])
        _report(f"{a} one move (n={n})", m)
    for a in sorted(atk.ARCHETYPES):
        v = atk._variant(a)
        victim = sorted(p for p in v.files if not p.startswith(MOVED))[-1]
        if a == "fixtest":
            victim = next(p for p in v.files if p.startswith("tests/test_"))
        for extra in (
            f"rm -f '{victim}'",
            f"echo x >> '{victim}'",
            f"mv '{victim}' '{victim}.bak'",
        ):
            _, m = await atk.grade(r, v, [*atk._ref(v), ("exec", {"command": extra})])
            _report(f"{a} ref + {extra}", m)
    v = atk._variant("crm")
    extra = ("add_contact", {"name": "Eve Extra", "email": "eve@extra.example", "company": "X"})
    _, m = await atk.grade(r, v, [*atk._ref(v), extra])
    _report("crm ref + extra contact", m)


async def main() -> None:
    """Print each attack's mean score."""
    print("graders from", envkernel_workspace.__file__)
    atk, r = _harness(), ProcessRunner()
    try:
        await _fixtest(atk, r)
        await _others(atk, r)
    finally:
        await r.aclose()
    print(json.dumps({"attack_mean_score_by_attack": SCORES}))


if __name__ == "__main__":
    asyncio.run(main())
