"""What the commands write and print: progress lines, the CSV (atomically, with its provenance record), summaries."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ..payment_tables import DEFAULT_CMS_CELL

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Progress", "progress_line", "input_files", "check_out", "write_csv", "atomic_write", "write_provenance",
           "print_recalibration", "report_stream"]


class Progress:
    """A percentage line on stderr, rewritten in place."""

    def __init__(self, label: str, enabled: bool):
        self.label = label
        self.enabled = enabled
        self.shown = -1

    def __call__(self, fraction: float) -> None:
        if not self.enabled:
            return
        percent = int(100 * min(max(fraction, 0.0), 1.0))
        if percent != self.shown:
            self.shown = percent
            end = "\n" if percent == 100 else ""
            print(f"\r{self.label}: {percent:3d}%", end=end, file=sys.stderr, flush=True)

    def close(self) -> None:
        """End an unfinished progress line (e.g. on an error) so the next message starts clean."""
        if self.enabled and 0 <= self.shown < 100:
            print(file=sys.stderr, flush=True)
        self.shown = -1


def progress_line(args, label):
    return Progress(label, bool(args.progress) or sys.stderr.isatty())


def input_files(args) -> dict:
    """The command's input files by option: what ``--out`` must not overwrite."""
    return {flag: getattr(args, name, None) for flag, name in (
        ("--calibration", "calibration"), ("--labels", "labels"), ("--new", "new"), ("--weights", "weights"),
        ("--settings", "settings"), ("--data", "data"))}


def check_out(out, inputs: dict, *, record: bool = False, flag: str = "--out") -> None:
    """Refuse an output path (``--out``, and with ``record`` its ``.provenance.json``) that is one of the
    ``{flag: path}`` inputs (writing it would overwrite the data just read), or that cannot be written: a
    missing folder or a folder as the file, an OSError naming the path, as the write itself would. Run it
    before any work that a failed write would waste or, for a program, record (a batch predicted whose
    sets cannot be written)."""
    import errno
    import os

    if out is None or str(out) == "-":
        return
    outs = [str(out)] + ([f"{out}.provenance.json"] if record else [])
    for given, source in inputs.items():
        if source is None or not isinstance(source, (str, os.PathLike)) or not os.path.isfile(source):
            continue
        for path in outs:
            if os.path.exists(path) and os.path.samefile(path, source):
                from ..io import DataError

                raise DataError(f"{flag} {out} is the {given} file: writing the output there would overwrite the data "
                                "read from it.", fix="Write the output to another file.")
    folder = os.path.dirname(os.path.abspath(str(out)))
    if os.path.isdir(str(out)):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(out))
    if not os.path.isdir(folder):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(out))
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "Permission denied", str(out))


def write_csv(frame: pd.DataFrame, out: str) -> bytes:
    """The export's CSV bytes; written here only to standard output (a file is written with its
    provenance record by :func:`write_provenance`, both or neither)."""
    from ..io import to_safe_csv

    data = to_safe_csv(frame, index=False)
    if out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return data


def atomic_write(files: dict) -> None:
    """Write every ``{path: bytes}`` whole or not at all: temporary files beside them, renamed over them
    once all are complete (a failed or interrupted write leaves the previous files as they were, and
    no partial one). An OSError names the file asked for, not the temporary one."""
    import os
    import tempfile

    umask = os.umask(0)
    os.umask(umask)
    done = {}
    try:
        for path, data in files.items():
            try:
                handle, done[path] = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".partial",
                                                      dir=os.path.dirname(os.path.abspath(path)))
                os.chmod(done[path], 0o666 & ~umask)  # the permissions open() would give, not mkstemp's 0600
                with os.fdopen(handle, "wb") as stream:
                    stream.write(data)
                if os.path.isdir(path):
                    raise IsADirectoryError(21, "Is a directory", path)
            except OSError as err:
                raise OSError(err.errno, err.strerror, path) from None
        for path, temporary in list(done.items()):
            os.replace(temporary, path)
            del done[path]
    finally:
        for temporary in done.values():
            os.unlink(temporary)


def write_provenance(args, spec, data, written: bytes, new=None, result=None) -> None:
    """``OUT.provenance.json`` beside the CSV (:mod:`favmac.provenance`); none for standard output."""
    from pathlib import Path

    from ..io import file_digests
    from ..provenance import provenance, provenance_json

    if args.out == "-":
        return
    inputs = dict(data.sources or {})
    if new is not None:
        inputs.update(new.attrs.get("sources", {}))
    if args.weights:
        inputs.update(file_digests(args.weights))
    cms = {"model": args.cms_model, "segment": args.cms_segment or DEFAULT_CMS_CELL} if args.cms_model else None
    doc = provenance(spec, inputs=inputs, codes=data.codes, cms=cms, outputs={Path(args.out).name: written},
                     recalibration=None if result is None else result.settings.get("recalibration_maps"))
    atomic_write({args.out: written, f"{args.out}.provenance.json": provenance_json(doc)})


def print_recalibration(args, result) -> None:
    """One line on the recalibration fold, when there is one."""
    if "recalibration_maps" in result.settings:
        from ..recalibration import recalibration_of

        maps = recalibration_of(result)
        fallback = maps.fallback_codes
        per_segment = "" if maps.by == "code" else (
            f", per segment ({sum(int(m.sum()) for m in maps.own.values())} of {len(maps.own) * maps.n_codes} "
            "code x segment maps their own, the rest the code's pooled map)")
        print(f"Recalibrated ({maps.method}) on the first {maps.n_fold} patients (no prediction, not calibration)"
              + per_segment + (f"; mapped to the fold's prevalence: {', '.join(fallback[:10])}{' ...' if len(fallback) > 10 else ''}"
                 if fallback else "") + ".", file=report_stream(args))


def report_stream(args):
    """Human-readable summaries go to stdout, unless the CSV itself does."""
    return sys.stderr if args.out == "-" else sys.stdout
