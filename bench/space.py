"""`python -m bench.space`: the app as a Hugging Face Space runs it, on this machine (a smoke test before a push).

1. README.md's front matter: ``python_version`` is the interpreter (without one, said so, and this Python's version
   is used), ``sdk_version`` must be requirements.txt's gradio;
2. the repository as a Space gets it (every tracked file, as in the working tree): each file over 10 MB must go to
   Git LFS/Xet by .gitattributes, and the size is stated;
3. a fresh virtual environment of that Python with requirements.txt plus ``spaces`` (tests/requirements.txt's pin;
   ZeroGPU preinstalls it), from pip's cache and local wheels;
4. ``python app.py`` as a throwaway non-root user (useradd, runuser) whose only writable folder is the app's, with
   an empty /tmp of its own (a private mount, as a Space's container has), ``GRADIO_SERVER_NAME=0.0.0.0``, port 7860,
   ``SPACES_ZERO_GPU`` unset (this machine is no ZeroGPU; tests/test_zerogpu.py imitates one);
5. the app answers its API (/translate, /ablate through Gradio's queue) and its page loads in Chromium (the first
   sentence's maps drawn), and the user wrote nothing outside the app folder and its own /tmp.

Prints each step, exits 1 at the first that fails; removes the user and the folder whatever happens. Root only.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PORT = 7860
LFS_MB = 10
WORK = Path("/var/tmp")  # the smoke test's folder (not /tmp: the app gets an empty /tmp of its own)
SENTENCE = "A man rides a bicycle down the street."


class Failed(RuntimeError):
    """A step that failed, its message for the user."""


def say(step: str, text: str) -> None:
    print(f"[space] {step}: {text}", flush=True)


def front_matter(readme: Path = ROOT / "README.md") -> dict[str, str]:
    """README.md's YAML front matter, flat ``key: value`` lines (quotes removed)."""
    text = readme.read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    if not match:
        return {}
    pairs = (line.split(":", 1) for line in match.group(1).splitlines() if ":" in line)
    return {k.strip(): v.strip().strip("\"'") for k, v in pairs}


def interpreter(meta: dict[str, str]) -> tuple[str, str]:
    """(an interpreter of the front matter's Python that any user can run, what was asked)."""
    asked = meta.get("python_version")
    if not asked:
        say("python", "the front matter names no python_version (a Space then picks its default); using this "
            f"Python's, {sys.version_info.major}.{sys.version_info.minor}")
        asked = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (f"/usr/bin/python{asked}", f"/usr/local/bin/python{asked}", shutil.which(f"python{asked}")):
        if candidate and Path(candidate).exists() and not candidate.startswith("/root"):
            return candidate, asked
    raise Failed(f"no Python {asked} that a non-root user can run (looked in /usr/bin, /usr/local/bin, PATH)")


def pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a requirements file."""
    lines = (line.split("#")[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return dict(line.split("==", 1) for line in lines if "==" in line)


def repository(limit_mb: float = LFS_MB) -> dict:
    """The tracked files: count and bytes, the bytes .gitattributes sends to LFS/Xet (``filter=lfs`` or ``xet``),
    and the files over ``limit_mb`` with their filter."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, check=True, text=True).stdout

    files = [f for f in git("ls-files", "-z").split("\0") if f and (ROOT / f).is_file()]
    sizes = {f: (ROOT / f).stat().st_size for f in files}
    out = git("check-attr", "-z", "filter", "--", *files).split("\0")
    filters = {out[i]: out[i + 2] for i in range(0, len(out) - 2, 3)}  # path, "filter", value
    sent = [f for f in files if filters.get(f) in ("lfs", "xet")]
    return {"files": files, "bytes": sum(sizes.values()), "lfs_bytes": sum(sizes[f] for f in sent),
            "big": {f: (size, filters.get(f, "unspecified")) for f, size in sizes.items() if size > limit_mb * 1e6}}


def copy_app(files: list[str], app: Path) -> None:
    for name in files:
        target = app / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)


def venv(python: str, folder: Path, spaces_pin: str) -> float:
    """A fresh virtual environment at ``folder``: requirements.txt and ``spaces``; seconds taken."""
    t0 = time.perf_counter()
    subprocess.run([python, "-m", "venv", str(folder)], check=True)
    out = subprocess.run([str(folder / "bin" / "pip"), "install", "-q", "-r", str(ROOT / "requirements.txt"),
                          f"spaces=={spaces_pin}"], capture_output=True, text=True)
    if out.returncode:
        raise Failed(f"pip install failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return time.perf_counter() - t0


def port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def wait_for_page(url: str, proc: subprocess.Popen, log: Path, timeout: float = 300) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            raise Failed(f"the app exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return time.perf_counter() - t0
        except OSError:
            time.sleep(0.25)
    raise Failed(f"no answer on {url} within {timeout:.0f} s:\n{log.read_text(errors='replace')[-3000:]}")


def check_api(url: str) -> dict:
    from bench.common import GradioHTTP

    client = GradioHTTP(url, timeout=300)
    try:
        translation = client.call("translate", [SENTENCE, 4])[0][0]
        t0 = time.perf_counter()
        ablated = client.call("ablate", [SENTENCE, ["cross:6:2"]])[0][0]
        ablate_s = time.perf_counter() - t0
    finally:
        client.close()
    if not isinstance(translation, str) or not translation.strip():
        raise Failed(f"/translate answered {translation!r}")
    sample = ablated["sample"]
    return {"translation": translation, "ablate_s": ablate_s, "bleu": (sample["before"]["bleu"],
                                                                       sample["after"]["bleu"]),
            "note": sample.get("note", "")}


def check_page(url: str) -> float:
    from playwright.sync_api import sync_playwright

    from bench.browser import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page()
            t0 = time.perf_counter()
            page.goto(url, wait_until="load", timeout=120_000)
            page.wait_for_selector("#overview .js-plotly-plot", timeout=180_000)  # the first sentence's maps
            return time.perf_counter() - t0
        finally:
            browser.close()


def serve(python: Path, app: Path, user: str, port: int, log: Path) -> subprocess.Popen:
    """``python app.py`` in ``app`` as ``user``, in a mount namespace of its own with an empty /tmp."""
    env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(app), "LANG": "C.UTF-8",
           "GRADIO_SERVER_NAME": "0.0.0.0", "GRADIO_SERVER_PORT": str(port), "PYTHONUNBUFFERED": "1"}
    runuser = shutil.which("runuser") or "/usr/sbin/runuser"
    inner = f"mount -t tmpfs -o mode=1777 tmpfs /tmp && exec {runuser} -u {user} -- {python} app.py"
    return subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", inner], cwd=app, env=env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def written_outside(user: str, app: Path) -> list[str]:
    """Files the user owns in the machine's world-writable places (its /tmp was private and is gone)."""
    out = subprocess.run(["find", "/tmp", "/var/tmp", "/dev/shm", "-xdev", "-user", user], capture_output=True,
                         text=True).stdout.split()
    return [p for p in out if not Path(p).is_relative_to(app)]


def main() -> int:
    if os.geteuid() != 0:
        say("user", "run as root: the smoke test makes a throwaway user (useradd) to run the app as")
        return 1
    user = f"space-{uuid.uuid4().hex[:8]}"
    root = Path(tempfile.mkdtemp(prefix="space-smoke-", dir=WORK))
    proc = None
    try:
        meta = front_matter()
        python, asked = interpreter(meta)
        version = subprocess.run([python, "--version"], capture_output=True, text=True).stdout.strip()
        say("python", f"front matter python_version {meta.get('python_version', '(none)')!r}: {python} ({version})")
        gradio = pins(ROOT / "requirements.txt").get("gradio")
        if meta.get("sdk_version") != gradio:
            raise Failed(f"front matter sdk_version {meta.get('sdk_version')!r} but requirements.txt pins gradio "
                         f"{gradio!r}")
        say("sdk", f"sdk {meta.get('sdk')} {meta.get('sdk_version')} = requirements.txt's gradio=={gradio}")
        repo = repository()
        for name, (size, how) in repo["big"].items():
            say("lfs", f"{name}: {size / 1e6:.1f} MB, filter {how}")
        if unsent := [n for n, (_, how) in repo["big"].items() if how not in ("lfs", "xet")]:
            raise Failed(f"over {LFS_MB} MB and not sent to LFS/Xet by .gitattributes: {', '.join(unsent)}")
        say("repository", f"{len(repo['files'])} tracked files, {repo['bytes'] / 1e6:.1f} MB (in LFS by "
            f".gitattributes: {repo['lfs_bytes'] / 1e6:.1f} MB); none over {LFS_MB} MB outside LFS")
        os.chmod(root, 0o755)
        app = root / "app"
        copy_app(repo["files"], app)
        spaces_pin = pins(ROOT / "tests" / "requirements.txt")["spaces"]
        seconds = venv(python, root / "venv", spaces_pin)
        say("venv", f"requirements.txt + spaces=={spaces_pin} in {seconds:.0f} s ({root / 'venv'}, root's, read-only "
            "to the app)")
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", str(app), "--shell",
                        "/usr/sbin/nologin", user], check=True)
        subprocess.run(["chown", "-R", f"{user}:{user}", str(app)], check=True)
        port = PORT if port_free(PORT) else None
        if port is None:
            from bench.common import free_port

            port = free_port()
            say("port", f"{PORT} is taken on this machine (another app): serving on {port} instead")
        log = root / "app.log"
        proc = serve(root / "venv" / "bin" / "python", app, user, port, log)
        url = f"http://127.0.0.1:{port}/"
        up = wait_for_page(url, proc, log)
        say("serve", f"python app.py as {user} (not root; writes only {app} and its own /tmp), "
            f"GRADIO_SERVER_NAME=0.0.0.0, port {port}: HTTP 200 after {up:.1f} s")
        api = check_api(url)
        say("api", f"/translate → {api['translation']!r}; /ablate cross:6:2 → sample BLEU {api['bleu'][0]:.2f} → "
            f"{api['bleu'][1]:.2f} in {api['ablate_s']:.1f} s{' (' + api['note'] + ')' if api['note'] else ''}")
        say("page", f"loaded in Chromium, the first sentence's maps drawn after {check_page(url):.1f} s")
        if outside := written_outside(user, app):
            raise Failed(f"the app wrote outside its folder: {', '.join(outside[:10])}")
        say("files", "the app wrote nothing outside its folder and its own /tmp")
        say("done", "the Space smoke test passed")
        return 0
    except Failed as exc:
        say("FAILED", str(exc))
        return 1
    finally:
        if proc is not None:
            stop(proc.pid)
        if subprocess.run(["id", user], capture_output=True).returncode == 0:
            gone = subprocess.run(["userdel", user], capture_output=True, text=True)
            if gone.returncode:
                say("cleanup", f"userdel {user} failed: {gone.stderr.strip()}")
        shutil.rmtree(root, ignore_errors=True)


def stop(group: int, grace_s: float = 20.0) -> None:
    """SIGTERM to the app's process group (the app and its model process), SIGKILL to what is left after
    ``grace_s``; returns when the group is empty."""
    for sig, wait in ((15, grace_s), (9, 5.0)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < wait:
            try:
                os.waitpid(group, os.WNOHANG)  # reap the leader (our child) so the group can empty
            except ChildProcessError:
                pass
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main())
