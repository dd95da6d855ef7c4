"""Read what a W&B offline run wrote: the run record (group, job type, tags) in its ``.wandb`` file.

A ``.wandb`` file is a LevelDB-style log (wandb's ``store``): a 7-byte header (``:W&B``, a
magic number, a version), then 32 KiB blocks of chunks, each a 7-byte head (CRC32, length,
type: 1 whole, 2 first, 3 middle, 4 last) and a piece of a serialised ``wandb_internal_pb2.Record``.
"""

from __future__ import annotations

import struct
from pathlib import Path

BLOCK, HEAD = 32768, 7


def records(path: Path) -> list:
    from wandb.proto import wandb_internal_pb2 as pb

    data = Path(path).read_bytes()
    assert data[:4] == b":W&B", path
    found, pos, pieces = [], HEAD, b""
    while pos + HEAD <= len(data):
        if BLOCK - pos % BLOCK < HEAD:  # a block's tail too short for a head is padding
            pos += BLOCK - pos % BLOCK
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + HEAD])
        if kind == 0:
            break
        chunk, pos = data[pos + HEAD:pos + HEAD + length], pos + HEAD + length
        pieces = chunk if kind in (1, 2) else pieces + chunk
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(pieces)
            found.append(record)
    return found


def run_record(path: Path):
    """The run's own record (the first one: group, job_type, tags …)."""
    return next(r.run for r in records(path) if r.WhichOneof("record_type") == "run")
