"""A single-node SLURM cluster for tests, in a container without systemd: no cgroups,
no accounting (docs/tests.md)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path


def available() -> bool:
    return all(shutil.which(x) for x in ("slurmctld", "slurmd", "munged", "sinfo"))


class SlurmCluster:
    def __init__(self, folder: Path):
        self.folder = folder
        self.conf = folder / "slurm.conf"
        self.pids: list[int] = []
        self.munged_started = False

    def _config(self) -> str:
        host = socket.gethostname().split(".")[0]
        node = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
        node = " ".join(part for part in node.split() if part.split("=")[0] in ("NodeName", "CPUs", "RealMemory",
                                                                                 "Boards", "SocketsPerBoard",
                                                                                 "CoresPerSocket", "ThreadsPerCore"))
        f = self.folder
        return "\n".join([
            "ClusterName=local", f"SlurmctldHost={host}", "SlurmUser=root", "AuthType=auth/munge", "CredType=cred/munge",
            f"StateSaveLocation={f}/state", f"SlurmdSpoolDir={f}/spool", f"SlurmctldPidFile={f}/slurmctld.pid",
            f"SlurmdPidFile={f}/slurmd.pid", f"SlurmctldLogFile={f}/slurmctld.log", f"SlurmdLogFile={f}/slurmd.log",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
            "ReturnToService=2", "MpiDefault=none", "MailProg=/bin/true",
            f"{node} State=UNKNOWN", f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP", "",
        ])

    def start(self) -> None:
        (self.folder / "state").mkdir(parents=True, exist_ok=True)
        (self.folder / "spool").mkdir(parents=True, exist_ok=True)
        self.conf.write_text(self._config())
        os.environ["SLURM_CONF"] = str(self.conf)
        if subprocess.run(["munge", "-n"], capture_output=True).returncode != 0:
            subprocess.run(["install", "-d", "-o", "munge", "-g", "munge", "-m", "755", "/run/munge"], check=True)
            subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged"], check=True)
            self.munged_started = True
            self._wait(lambda: subprocess.run(["munge", "-n"], capture_output=True).returncode == 0, "munged")
        for daemon in ("slurmctld", "slurmd"):
            proc = subprocess.Popen([daemon, "-D", "-f", str(self.conf)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
            self.pids.append(proc.pid)
        self._wait(lambda: subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True).stdout.strip() == "idle",
                   "an idle node")

    def _wait(self, ready, what: str, seconds: float = 60) -> None:
        deadline = time.time() + seconds
        while time.time() < deadline:
            if ready():
                return
            time.sleep(0.3)
        logs = "".join(p.read_text()[-1500:] for p in self.folder.glob("*.log"))
        raise RuntimeError(f"SLURM test cluster: no {what} after {seconds} s.\n{logs}")

    def stop(self) -> None:
        for pid in reversed(self.pids):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        time.sleep(1)
        if self.munged_started:
            pidfile = Path("/run/munge/munged.pid")
            if pidfile.exists():
                try:
                    os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)
                except (ProcessLookupError, ValueError):
                    pass
