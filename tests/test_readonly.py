"""Readers never write; read-only and full stores. analyze.py, mip.summary,
mip.show and attribute.py list a damaged record and leave it where it is; a job on a read-only
store or a full disk stops with one line (exit 2) and writes nothing partial. The read-only and
full file systems are real: tmpfs mounts (the tests run as root, whom chmod does not stop);
without the right to mount they are skipped."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from . import stored
from .conftest import run_entry

JOB = ("model=mock", "task=arith", "setting=smoke", "budget=smoke", "pattern=random", "order_seeds=[0,1]", "progress=false")


@pytest.fixture
def tmpfs(tmp_path):
    """``mount(size)``: a fresh tmpfs of that size; unmounted afterwards."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        point = tmp_path / f"mnt{len(mounted)}"
        point.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)], capture_output=True)
        if done.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], check=False)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def one_line_error(out) -> str:
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in out.stderr, out.stderr[-3000:]
    return errors[0]


def damaged_store(results: Path, store: Path) -> Path:
    out = run_entry("run.py", *JOB, f"paths.store_dir={store}", env={"MIP_RESULTS_DIR": str(results)})
    assert out.returncode == 0, out.stderr[-2000:]
    line = stored.entries(store / "mock" / "arith")[0]
    line.overwrite(line.data[:50])  # torn
    return line.path


def test_readers_list_a_damaged_record_and_move_nothing(results, figures_unencoded):
    store = results / "store"
    record = damaged_store(results, store)
    before = snapshot(store)
    (job,) = (results / "runs").rglob("job.json")
    summary = run_entry("-m", "mip.summary", str(job.parent))
    assert summary.returncode == 0 and f"Unreadable record {record}" in summary.stdout, summary.stderr[-2000:]
    with pytest.warns(UserWarning, match=f"unreadable record {record}"):
        show = run_entry("-m", "mip.show", str(store))
    assert show.returncode == 0, show.stderr[-2000:]
    report = run_entry("analyze.py", f"results=[{store}]", f"out_dir={results / 'report'}")
    assert report.returncode == 0, report.stderr[-2000:]
    # reads every record, then finds none of this model: it stops before loading weights
    attribution = run_entry("attribute.py", "model=smollm2_135m", "records_model=nobody", "task=arith",
                            f"results=[{store}]", f"out_dir={results / 'attr'}")
    assert attribution.returncode == 2 and "No records of model nobody" in attribution.stderr, attribution.stderr[-2000:]
    assert snapshot(store) == before  # nothing moved, removed or written
    assert record.exists() and not (store / ".quarantine").exists()


def test_a_job_on_a_read_only_store_with_a_damaged_record_stops_in_one_line(results, tmpfs):
    mount = tmpfs("16m")
    store = mount / "store"
    damaged_store(results, store)
    subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
    before = snapshot(store)
    out = run_entry("run.py", *JOB, f"paths.store_dir={store}", env={"MIP_RESULTS_DIR": str(results)})
    assert out.returncode == 2
    assert "is not writable" in one_line_error(out)  # found by the job's check, before it reads the store
    (first,) = [j for j in (results / "runs").rglob("job.json")]  # the refused job wrote no manifest
    summary = run_entry("-m", "mip.summary", str(first.parent))
    assert summary.returncode == 0 and "Unreadable record" in summary.stdout, summary.stderr[-2000:]
    assert snapshot(store) == before


def test_a_job_on_a_full_disk_stops_in_one_line_and_writes_nothing(tmpfs):
    mount = tmpfs("64k")
    filler = mount / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:  # ENOSPC: the disk is full
        pass
    finally:
        os.close(fd)
    out = run_entry("run.py", *JOB, env={"MIP_RESULTS_DIR": str(mount / "results")})
    assert out.returncode == 2
    assert "full" in one_line_error(out) or "No space left" in one_line_error(out)
    assert [p for p in mount.rglob("*") if p.is_file() and p != filler] == []  # no 0-byte .hydra/config.yaml
