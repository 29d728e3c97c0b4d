"""``favmac program create|predict|label|settings|status|decisions|export|list``: programs from the command line.

The same files as ``favmac replay`` / ``favmac predict`` (read by :mod:`favmac.io`: CSV or Parquet, the
probabilities + labels pair or the wide layout, segment and member columns) and the same settings file
(:meth:`favmac.RunSpec.to_json`, the app's download, read with :func:`favmac.runspec.read_settings_json`).

Every command takes ``--store URL`` (default ``$FAVMAC_STORE``, else the SQLite file in the user's data
directory) and the acting user: ``--user ID --team TEAM --role viewer|auditor`` (default: the local user,
an auditor of the team "local"). On a shared PostgreSQL server these flags are not a sign-in: whoever
holds the database's credentials can act as anyone, so the database credentials are the CLI's boundary
(give each team its own database user, or use the app with sign-in).

Examples::

    favmac program create hcc-east --calibration sample_data/hcc_calibration.csv --settings settings.json
    favmac program predict hcc-east --new march.csv --out march_sets.csv
    favmac program label hcc-east --labels march_reviews.csv
    favmac program status hcc-east
    favmac program export hcc-east --out trail.parquet
"""
from __future__ import annotations

import argparse
import sys

from .parser import Command

__all__ = ["COMMAND", "register", "run"]


def register(sub) -> argparse.ArgumentParser:
    """Add ``program`` and its commands to the CLI's sub-parsers (:data:`COMMAND`, listed in
    :data:`favmac.cli.commands.COMMANDS`); returns the ``program`` parser."""
    program = sub.add_parser("program", help="programs that last: FavMac running for months in a store",
                             description="Create a program from labelled patients, predict new batches, record their "
                             "labels as they come back, change settings, and read the status and audit trail; all in "
                             "a store (SQLite by default, PostgreSQL by URL).")
    commands = program.add_subparsers(dest="program_command", required=True, metavar="{create,predict,label,settings,"
                                      "status,decisions,export,list}")

    def common(parser, named=True):
        if named:
            parser.add_argument("name", help="the program's name")
        where = parser.add_argument_group("store and user")
        where.add_argument("--store", metavar="URL", help="sqlite:///path or postgresql+psycopg://user:password@host/db "
                           "(default: $FAVMAC_STORE, else ~/.local/share/favmac/store.sqlite)")
        where.add_argument("--user", metavar="ID", help="act as this user (default: the local user)")
        where.add_argument("--team", metavar="TEAM", action="append", help="the acting user's team (repeat for several)")
        where.add_argument("--role", choices=["viewer", "auditor"], default="auditor", help="the acting user's role")
        return parser

    create = common(commands.add_parser("create", help="create a program from labelled patients (its history)"))
    create.add_argument("--calibration", required=True, metavar="FILE",
                        help="labelled patients: a wide file, or probabilities with --labels")
    create.add_argument("--labels", metavar="FILE", help="labels file (patient_id, one 0/1 column per code)")
    create.add_argument("--settings", required=True, metavar="JSON", help="the settings file (one target)")
    create.add_argument("--program-team", metavar="TEAM", help="the team the program belongs to (default: your one team)")
    predict = common(commands.add_parser("predict", help="choose and record the sets of new patients"))
    predict.add_argument("--new", required=True, metavar="FILE", help="new patients' probabilities (CSV or Parquet)")
    predict.add_argument("--out", required=True, metavar="FILE", help="their sets as CSV ('-': standard output)")
    label = common(commands.add_parser("label", help="record confirmed codes of predicted patients"))
    label.add_argument("--labels", required=True, metavar="FILE", help="labels file (patient_id, one 0/1 column per code)")
    settings = common(commands.add_parser("settings", help="a new settings version"))
    settings.add_argument("--settings", required=True, metavar="JSON", help="the settings file")
    common(commands.add_parser("status", help="patients predicted, labelled, pending; realized cost; value"))
    decisions = common(commands.add_parser("decisions", help="the audit trail (CSV on standard output or --out)"))
    decisions.add_argument("--out", metavar="FILE", default="-", help="CSV file (default: standard output)")
    export = common(commands.add_parser("export", help="write the audit trail as CSV or Parquet"))
    export.add_argument("--out", required=True, metavar="FILE", help="FILE.csv or FILE.parquet")
    common(commands.add_parser("list", help="the programs of your teams"), named=False)
    return program


def _identity(args):
    from ..access import LOCAL_USER, Identity

    if args.user is None and not args.team:
        return LOCAL_USER
    return Identity(user_id=args.user or LOCAL_USER.user_id, name=args.user or LOCAL_USER.name,
                    teams=tuple(args.team or LOCAL_USER.teams), role=args.role)


def _settings(path, codes):
    from ..runspec import read_settings_json

    with open(path, "rb") as handle:
        return read_settings_json(handle.read(), codes=codes).spec


def _columns(spec) -> list:
    from ..store.state import segment_columns

    return segment_columns(spec)


def _write_csv(frame, out: str) -> None:
    from ..io import to_safe_csv
    from .output import atomic_write

    data = to_safe_csv(frame, index=False)
    if out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    atomic_write({out: data})


def run(args) -> int:
    """Run one ``favmac program`` command; errors propagate to :func:`favmac.cli.main`, which prints them."""
    from ..io import load_calibration, load_new_patients_segmented, read_labels
    from ..store import open_store
    from ..store.members import dataset_members

    store = open_store(args.store).as_user(_identity(args))
    command = args.program_command
    report = sys.stderr if getattr(args, "out", None) == "-" else sys.stdout
    if command == "list":
        frame = store.programs()
        print(frame.to_string(index=False) if len(frame) else "no programs in your teams", file=report)
        return 0
    if command == "create":
        probe = load_calibration(args.calibration, args.labels)
        spec = _settings(args.settings, probe.codes)
        columns = _columns(spec)
        data = load_calibration(args.calibration, args.labels, segment_column=columns or None, keep_columns=True) \
            if columns else load_calibration(args.calibration, args.labels, keep_columns=True)
        program = store.create_program(args.name, spec, data.patient_ids, data.prob_array(), data.label_array(),
                                       codes=data.codes, members=dataset_members(data), team=args.program_team)
        print(f"Created program {program.name!r} (team {program.team}): {data.n_patients} labelled patients x "
              f"{data.n_codes} codes as its history; settings version 1.", file=report)
        return 0
    program = store.program(args.name)
    from .output import check_out, input_files

    check_out(getattr(args, "out", None), input_files(args))  # before a batch is recorded whose sets could not be written
    if command == "predict":
        columns = _columns(program.spec)
        frame, groups = load_new_patients_segmented(args.new, program.codes, segment_column=columns or None)
        members = {}
        if isinstance(groups, dict):
            members.update(groups)
        elif groups is not None and columns:
            members[columns[0]] = groups
        found = frame.attrs.get("members") or {}
        members["cells"], members["known"] = found.get("cells"), found.get("known")
        out = program.predict(frame.index.to_numpy(dtype=object), frame.to_numpy(dtype=float), members=members,
                              batch=str(args.new).rsplit("/", 1)[-1])
        out = out.assign(codes=[";".join(c) for c in out["codes"]])
        try:
            _write_csv(out, args.out)
        except OSError as err:  # the batch is recorded: say where its sets are
            raise OSError(err.errno, f"{err.strerror} (the batch was recorded; 'favmac program decisions "
                          f"{program.name} --out FILE' writes its sets)", args.out) from None
        print(f"Predicted {len(out)} patients (settings version {program.version}): {out['n_codes'].mean():.2f} codes "
              f"flagged per patient on average, {int((out['n_codes'] == 0).sum())} with none.", file=report)
        return 0
    if command == "label":
        labels = read_labels(args.labels)
        missing = [c for c in program.codes if c not in labels.columns]
        if missing or len(labels.columns) != len(program.codes):
            from ..io import DataError

            raise DataError(f"the labels' codes differ from the program's ({', '.join(program.codes[:8])}"
                            f"{' ...' if len(program.codes) > 8 else ''}).", file=args.labels, row=1)
        count = program.label(labels.index.to_numpy(dtype=object), labels[program.codes].to_numpy(),
                              batch=str(args.labels).rsplit("/", 1)[-1])
        from ..io.errors import plural

        print(f"Labelled {plural(count, 'patient')}" + (f" ({len(labels) - count} already labelled with the same codes)"
                                                       if count < len(labels) else "") + ".", file=report)
        return 0
    if command == "settings":
        version = program.update_settings(_settings(args.settings, program.codes))
        print(f"Settings version {version} recorded.", file=report)
        return 0
    if command == "status":
        status = program.status()
        what = "mean cost" if status["control"] == "expected" else "violation rate"
        print(f"{program.name} (team {program.team}), settings version {status['version']}: "
              f"{status['predicted']} predicted, {status['labelled']} labelled, {status['pending']} pending; "
              f"history {status['history']}.", file=report)
        if status["labelled"]:
            error = status["standard_error"]
            spread = f" ± {error:.2g} (standard error)" if error == error else " (one patient: no standard error yet)"
            print(f"realized {what}: {status['realized']:.4g}{spread} against "
                  f"the target {status['target']:g}; value captured {status['value_captured']:.4g} of "
                  f"{status['value_available']:.4g} confirmed.", file=report)
        else:
            print(f"realized {what}: none yet (no predicted patient labelled); target {status['target']:g}.", file=report)
        return 0
    if command == "decisions":
        _write_csv(program.decisions(), args.out)
        return 0
    if command == "export":
        program.export(args.out)
        print(f"Wrote the audit trail ({program.status()['predicted']} decisions) to {args.out}.", file=report)
        return 0
    raise argparse.ArgumentError(None, f"unknown program command {command!r}")


COMMAND = Command(
    name="program",
    summary=("programs that last: create, predict, label, settings, status, decisions, export (a store).",),
    add_parser=register,
    run=run,
)
