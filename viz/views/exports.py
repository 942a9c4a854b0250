"""Export files on disk, never more than a bound: the newest exports stay, the oldest are removed.

A public app cannot let every click leave files behind (200 exports once left 514 MB). ``ExportFolder``
writes each export into its own sub-folder of one folder and, after each write, removes the oldest
exports until at most ``max_exports`` remain and they hold at most ``max_bytes`` (the newest always
stays). The app puts the folder inside Gradio's cache, so Gradio serves the files without a copy of
its own. A download link of an export that has since been removed answers 404: export again.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

MAX_EXPORTS = 20
FOLDER_PREFIX = "attention-exports-"  # an ExportFolder's folder (viz.ui.guards answers 404 for a removed export)
MAX_BYTES = 200 * 2**20  # a 100 + 100-token sentence exports ~13 MB (npz + JSON)


class ExportFolder:
    """Exports under ``parent`` (created on the first write, one folder per ``ExportFolder``). ``roots``: every
    export folder this process made (the only files the app serves: ``viz.ui.callers``)."""

    roots: set[Path] = set()

    def __init__(self, parent: str | Path, max_exports: int = MAX_EXPORTS, max_bytes: int = MAX_BYTES):
        if max_exports < 1 or max_bytes < 1:
            raise ValueError("an export folder keeps at least one export and one byte")
        self.parent, self.max_exports, self.max_bytes = Path(parent), max_exports, max_bytes
        self._root: Path | None = None
        self._lock = threading.Lock()
        self._count = itertools.count()

    @property
    def root(self) -> Path:
        if self._root is None:
            self.parent.mkdir(parents=True, exist_ok=True)
            self._root = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir=self.parent))
            ExportFolder.roots.add(self._root.resolve())
        return self._root

    def write(self, files: dict[str, bytes]) -> list[str]:
        """Write ``files`` (name -> content) as one export; their paths. Then remove the oldest exports.
        One write at a time (under a lock), so that pruning never meets a half-written export."""
        with self._lock:
            # names sort in the order written: nanoseconds, then a counter for two writes in one tick
            folder = self.root / f"{time.time_ns():020d}-{next(self._count):06d}"
            folder.mkdir()
            paths = []
            for name, data in files.items():
                path = folder / Path(name).name
                path.write_bytes(data)
                paths.append(str(path))
            self._prune(keep=folder)
        return paths

    def exports(self) -> list[Path]:
        """The export folders, oldest first."""
        if self._root is None or not self._root.exists():
            return []
        return sorted(p for p in self._root.iterdir() if p.is_dir())

    def usage(self) -> tuple[int, int]:
        """(files, bytes) on disk now."""
        sizes = [_size(f) for folder in self.exports() for f in folder.iterdir()]
        return len(sizes), sum(sizes)

    def _prune(self, keep: Path) -> None:
        """Remove the oldest exports until the bounds hold; ``keep`` (the one just written) always stays."""
        folders = self.exports()
        sizes = {f: sum(_size(p) for p in f.iterdir()) for f in folders}
        total = sum(sizes.values())
        for i, folder in enumerate(folders):
            over = len(folders) - i > self.max_exports or total > self.max_bytes
            if not over or folder == keep:
                break
            shutil.rmtree(folder, ignore_errors=True)
            total -= sizes[folder]


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:  # removed meanwhile (Gradio's own cache cleaning)
        return 0
