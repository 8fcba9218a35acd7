"""Two ``agentgym selfplay`` runs on one archive: the second is refused, the first's report stays whole (issue 31).

Both runs are real ``agentgym selfplay`` processes. The first is paused (SIGSTOP) once it holds the archive, so
the second certainly starts while the first is mid-run, whatever the machine's speed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from meta_envs.design.archive import ArchiveBusy, EnvArchive

AGENTGYM = [sys.executable, "-m", "agentgym_envs.cli.main"]


def selfplay(archive: Path, rounds: int) -> list[str]:
    return [*AGENTGYM, "selfplay", "--designer", "scripted:hill-climber", "--group-size", "1", "--rounds",
            str(rounds), "--archive", str(archive)]


def wait_for_lock(lock: Path, pid: int, process: subprocess.Popen, timeout: float = 120.0) -> None:
    """Until ``lock`` names ``pid`` (the holder writes its pid once it holds the lock)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lock.exists() and lock.read_text().strip() == str(pid):
            return
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    pytest.fail(f"process {pid} never took {lock}")


def test_a_second_selfplay_on_the_same_archive_is_refused_and_the_first_resumes(tmp_path):
    archive = tmp_path / "archive"
    first = subprocess.Popen(selfplay(archive, 2), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_lock(archive / ".writer.lock", first.pid, first)
        os.kill(first.pid, signal.SIGSTOP)  # mid-run, holding the archive
        second = subprocess.run(selfplay(archive, 1), capture_output=True, text=True, timeout=120)
    finally:
        os.kill(first.pid, signal.SIGCONT)
    out, _ = first.communicate(timeout=600)
    assert second.returncode == 2, second
    (line,) = second.stdout.strip().splitlines()  # one clear line, no traceback
    assert f"is in use by another run (pid {first.pid})" in line and str(archive) in line, line
    assert first.returncode == 0, out
    report = json.loads((archive / "selfplay_report.json").read_text())
    assert [r["round"] for r in report["rounds"]] == [0, 1]  # the first run's rounds, all of them
    # once the first has finished, the same command continues its report
    again = subprocess.run(selfplay(archive, 1), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    report = json.loads((archive / "selfplay_report.json").read_text())
    assert [r["round"] for r in report["rounds"]] == [0, 1, 2] and len(report["growth"]) == 3
    assert not [p.name for p in archive.iterdir() if p.name.endswith(".tmp")]


def test_the_writer_lock_dies_with_its_holder(tmp_path):
    """A killed run leaves no stale lock: the kernel drops a flock with the process."""
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom meta_envs.design.archive import "
                               "EnvArchive\nwith EnvArchive(sys.argv[1]).writer():\n    print('held', flush=True)"
                               "\n    time.sleep(600)\n", str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ArchiveBusy, match=f"pid {holder.pid}"):
            with EnvArchive(tmp_path).writer():
                pass
    finally:
        holder.kill()
        holder.wait()
    with EnvArchive(tmp_path).writer():  # free again
        with pytest.raises(ArchiveBusy):  # and exclusive within one process too (flock is per open file)
            with EnvArchive(tmp_path).writer():
                pass
