"""The layers, checked in a fresh interpreter's ``sys.modules`` after importing every module, one by one:

    model/           never imports viz, gradio (or the app and its benchmark); its rooms import downwards
    viz/ (drawing)   never imports gradio or torch: arrays and token lists in, figures out
    viz/views/       never imports gradio (the presenters may call the model, hence torch)
    viz/ui/          the app's Gradio code: with app.py, the only modules that import gradio; never imports app.py
    app.py           importing it loads no model and changes no global state

``sys.modules`` only grows, so the first module after whose import a forbidden package is present is the
one that brought it in.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def modules(package: str) -> list[str]:
    folder = ROOT / package
    return sorted(".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                  for p in folder.rglob("*.py"))


def first_offenders(names: list[str], forbidden: set[str], path: Path = ROOT) -> dict[str, str]:
    """Import ``names`` (found under ``path``) in that order in a fresh interpreter; for each forbidden
    package, the module whose import brought it into ``sys.modules``."""
    code = (
        "import importlib, json, sys\n"
        f"forbidden, found = {sorted(forbidden)!r}, {{}}\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "    for bad in forbidden:\n"
        "        if bad in sys.modules and bad not in found:\n"
        "            found[bad] = name\n"
        "print(json.dumps(found))\n"
    )
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]  # packages installed there too
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys([str(path), str(ROOT), *inherited]))}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.splitlines()[-1])


def test_model_never_imports_viz_or_gradio():
    """Nor plotly: the model draws nothing."""
    names = modules("model")
    assert "model.network.transformer" in names and "model.network.inference" in names
    assert first_offenders(names, {"viz", "gradio", "plotly", "app", "bench"}) == {}


def test_the_models_rooms_import_downwards_only():
    """network <- probes <- serving, training: no room imports a room above it (so there is no import circle
    between rooms); ``model.terms`` imports nothing at all."""
    allowed = {"network": {"network"}, "probes": {"network", "probes"},
               "serving": {"network", "probes", "serving"}, "training": {"network", "probes", "training"}}
    for room, rooms in allowed.items():
        for path in sorted((ROOT / "model" / room).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("model."):
                    target = node.module.split(".")[1]
                    assert target in rooms | {"terms", "cli"}, f"{path.relative_to(ROOT)} imports {node.module}"
    terms = ast.parse((ROOT / "model" / "terms.py").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(terms) if isinstance(n, (ast.Import, ast.ImportFrom))]


def test_gradio_only_in_app_and_viz_ui():
    """Of the app's own code (app.py, model/, viz/), only app.py and viz/ui/ import gradio; viz/ui/ never imports
    app.py back (its tabs get what they share from viz.ui.wiring)."""
    importers, ui_imports_app = set(), []
    for path in [ROOT / "app.py", *sorted((ROOT / "model").rglob("*.py")), *sorted((ROOT / "viz").rglob("*.py"))]:
        name = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = [node.module or ""]
            else:
                continue
            if any(t == "gradio" or t.startswith("gradio.") for t in targets):
                importers.add(name)
            if name.startswith("viz/ui/") and "app" in targets:
                ui_imports_app.append(name)
    assert {"app.py", "viz/ui/wiring.py", "viz/ui/patches.py"} <= importers, importers
    assert {n for n in importers if n != "app.py" and not n.startswith("viz/ui/")} == set()
    assert ui_imports_app == []


def test_viz_never_imports_gradio_and_draws_without_torch():
    names = [n for n in modules("viz") if not n.startswith("viz.ui")]  # viz/ui/ is the app's Gradio code
    drawing = [n for n in names if not n.startswith("viz.views")]
    views = [n for n in names if n.startswith("viz.views")]
    assert {"viz.heatmaps", "viz.scaling", "viz.architecture", "viz.vocab"} <= set(drawing)
    assert {"viz.views.attention.maps", "viz.views.scaling"} <= set(views)
    found = first_offenders(drawing + views, {"gradio", "torch", "app", "bench"})
    assert "gradio" not in found and "app" not in found and "bench" not in found, found
    assert found.get("torch") is None or found["torch"].startswith("viz.views"), found


def test_the_check_names_the_module_that_imports(tmp_path):
    """It can fail: of three modules, the one that imports a forbidden package is named (not the one imported after
    it). (Small standard modules stand for gradio and torch: the check is the same, the interpreter starts at once.)"""
    for name, body in (("clean", "import json\n"), ("culprit", "import clean\nimport wave\n"),
                       ("later", "import wave\n")):
        (tmp_path / f"{name}.py").write_text(body, encoding="utf-8")
    assert first_offenders(["clean", "culprit", "later"], {"wave", "tabnanny"}, tmp_path) == {"wave": "culprit"}


def test_importing_the_app_loads_no_model_and_changes_no_global_state():
    code = """
import os, sys, torch
import model.network.inference

def refuse(*args, **kwargs):
    raise AssertionError("importing app.py loaded a model")

model.network.inference.Translator.__init__ = refuse
torch.set_num_threads(2)
environ = dict(os.environ)
import app
assert torch.get_num_threads() == 2, torch.get_num_threads()
assert dict(os.environ) == environ, set(os.environ.items()) ^ set(environ.items())
assert "demo" not in vars(app) and callable(app.create_app) and callable(app.main)
"""
    from viz.offline import OFFLINE_ENV  # the variables set: app.py only adds them where they are missing

    env = {**os.environ, **OFFLINE_ENV}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, timeout=300)
