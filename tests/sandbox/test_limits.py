"""Default limits bound every call, with every guard off: a fork of 3,000 processes stops at the process cap, a
call that eats the disk is ended at the free-space floor, a file cannot outgrow the file-size limit, and the
output kept is bounded; each limit comes from ``[sandbox.limits]``."""

from __future__ import annotations

import os
import shutil

from sandbox_stage import Scene, load_system, sleep_marker

import hermes_builtin.plugin
from hermes_core import ToolSystem
from hermes_core.config import Config
from hermes_core.sandbox import DEFAULT_LIMITS, settings_from_config
from hermes_core.testing import processes_gone, processes_with_arg, unguarded

FORK = r"""
import os, sys, time
marker = sys.argv[1]
made = 0
for _ in range(3000):
    try:
        pid = os.fork()
    except OSError as exc:
        print("fork refused after", made, "errno", exc.errno, flush=True)
        break
    if pid == 0:
        os.execvp("sleep", ["sleep", marker])
    made += 1
print("made", made, flush=True)
time.sleep(2)
"""


def _reload(scene: Scene, extra: str) -> None:
    """The stage's system again, with ``extra`` TOML added to its configuration."""
    scene.system.close()
    scene.system = load_system(scene.workspace, scene.backend, scene.config, scene.config_marker)
    scene.system.close()
    scene.config.write_text(scene.config.read_text() + extra)
    scene.system = unguarded(
        ToolSystem.load(
            load_entry_points=False,
            plugins_dir=False,
            plugins=[hermes_builtin.plugin],
            workspace=scene.workspace,
            config=scene.config,
        )
    )


def test_the_defaults_bound_every_call() -> None:
    limits = settings_from_config(Config({})).limits
    assert limits == DEFAULT_LIMITS
    assert limits.max_processes == 512 and limits.memory_mb and limits.cpu_seconds and limits.max_file_mb
    assert limits.max_output_bytes and limits.min_free_mb
    custom = settings_from_config(
        Config({"sandbox": {"limits": {"max_processes": 64, "max_output_mb": 2}}})
    ).limits
    assert custom.max_processes == 64 and custom.max_output_bytes == 2_000_000 and custom.memory_mb == 4096


def test_a_fork_of_3000_processes_stops_at_the_cap(scene: Scene) -> None:
    marker = sleep_marker()
    (scene.workspace / "fork.py").write_text(FORK)
    peak = 0

    def watch() -> None:
        nonlocal peak
        while not done:
            peak = max(peak, len(processes_with_arg(marker)))

    import threading

    done = False
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out = scene.shell("terminal", f"python3 fork.py {marker}", timeout=60)
    done = True
    watcher.join(5)
    assert "made 3000" not in out, out
    assert peak <= DEFAULT_LIMITS.max_processes, (peak, out)
    assert processes_gone(marker, 10), out


def test_a_call_that_eats_the_disk_is_ended_at_the_floor(scene: Scene) -> None:
    free_mb = shutil.disk_usage(scene.workspace).free // (1024 * 1024)
    # a floor just under what is free now: the call may write about 64 MB
    _reload(scene, f"[sandbox.limits]\nmin_free_mb = {free_mb}\nmax_file_mb = 100000\n")
    out = scene.shell(
        "terminal", "for i in $(seq 40); do head -c 16M /dev/zero > blob$i; done; echo wrote all", 120
    )
    written = sum(p.stat().st_size for p in scene.workspace.glob("blob*"))
    assert "filled the disk below" in out and "wrote all" not in out, out
    assert written < 600 * 1024 * 1024, written
    for blob in scene.workspace.glob("blob*"):
        blob.unlink()


def test_one_file_cannot_outgrow_the_file_size_limit(scene: Scene) -> None:
    _reload(scene, "[sandbox.limits]\nmax_file_mb = 4\n")
    scene.shell("terminal", "head -c 20M /dev/zero > big; echo done")
    assert os.path.getsize(scene.workspace / "big") <= 4 * 1024 * 1024
