"""Helpers shared by the subcommands: JSON output, progress flags, notes and printed figures."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from pramkit._json import dumps, stamp, to_jsonable
from pramkit.errors import ParameterError
from pramkit.settings import comma_numbers  # noqa: F401  # the flags' parsers, imported from here
from pramkit.settings import markers as _markers


def print_json(obj: dict[str, Any], *, kind: str, plain: bool = False) -> None:
    """One JSON object on stdout (full precision), starting with its ``format`` and ``version``.

    Parameters
    ----------
    obj : dict
        A result, usually its ``to_dict()``: NumPy values are written as plain
        numbers and infinities as ``"inf"`` (:func:`pramkit._json.to_jsonable`),
        so the output is strict JSON.
    kind : str
        The kind of output (a key of :data:`pramkit._json.OUTPUT_FORMATS`), printed as
        ``"format"`` with its ``"version"`` (:func:`pramkit._json.stamp`); its JSON Schema is
        installed with the package (:func:`pramkit._json.output_schema`).
    plain : bool, default False
        ``obj`` holds plain JSON values already (no conversion).

    Examples
    --------
    >>> import numpy as np
    >>> print_json({"epsilon": np.float64(1 / 3), "bound": float("inf"), "counts": np.array([3, 1])},
    ...            kind="pramkit.design.matrix")
    {
      "format": "pramkit.design.matrix",
      "version": 1,
      "epsilon": 0.3333333333333333,
      "bound": "inf",
      "counts": [3, 1]
    }
    """
    value = stamp(obj, kind)
    sys.stdout.write(dumps(value if plain else to_jsonable(value)) + "\n")


def add_na_values(parser: argparse.ArgumentParser) -> None:
    """``--na-values``: the texts that mean missing in a CSV file, the same option for every command.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        A command's parser; the option is parsed into ``na_values``, a tuple of texts.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_na_values(parser)
    >>> parser.parse_args([]).na_values                               # the default
    ('NA',)
    >>> parser.parse_args(["--na-values", "NA, -9,."]).na_values
    ('NA', '-9', '.')
    >>> parser.parse_args(["--na-values", ""]).na_values              # only the empty field is missing
    ()
    """
    from pramkit.defaults import NA_VALUES

    parser.add_argument("--na-values", type=_markers, default=NA_VALUES, metavar="TEXT[,TEXT...]",
                        help="texts that mean missing in a CSV file, besides the empty field, comma-separated "
                             f"(default: {','.join(NA_VALUES)}; '' for none). Missing values are never perturbed "
                             "and are written back as they were; give design, apply, estimate, risk and report "
                             "the same")


def add_engine_options(parser: argparse.ArgumentParser, spark: str = "Spark jobs") -> None:
    """``--engine`` and ``--spark-master``: where the command's passes over records run, the same options
    for every command that reads records (the library routes: :mod:`pramkit.engine.spark`).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        A command's parser; the options are parsed into ``engine`` and ``spark_master``.
    spark : str
        What ``--engine spark`` does for this command, for its help.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_engine_options(parser)
    >>> args = parser.parse_args(["--engine", "spark", "--spark-master", "local[4]"])
    >>> args.engine, args.spark_master, parser.parse_args([]).engine, parser.parse_args([]).spark_master
    ('spark', 'local[4]', 'local', 'local[2]')
    """
    from pramkit.validate import ENGINES, SPARK_MASTER

    parser.add_argument("--engine", metavar="{" + ",".join(ENGINES) + "}", default=ENGINES[0],
                        help=f"local: streamed on this machine (default); spark: {spark}")
    parser.add_argument("--spark-master", default=SPARK_MASTER,
                        help="Spark master URL for --engine spark (default %(default)s)")


def add_csv_dialect(parser: argparse.ArgumentParser) -> None:
    """``--sep``, ``--encoding`` and ``--decimal``: how the command's CSV data files are written, the same options
    for every command that reads one (checked by :func:`pramkit.validate.csv_separator`,
    :func:`pramkit.validate.text_encoding` when the file is read, and :func:`check_csv_dialect` before any work).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        A command's parser; the options are parsed into ``sep``, ``encoding`` and ``decimal`` (texts).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_csv_dialect(parser)
    >>> args = parser.parse_args(["--sep", ";", "--encoding", "latin-1", "--decimal", ","])
    >>> args.sep, args.encoding, args.decimal, parser.parse_args([]).sep, parser.parse_args([]).decimal
    (';', 'latin-1', ',', ',', '.')
    """
    from pramkit.defaults import CSV_DECIMAL, CSV_ENCODING, CSV_SEP

    parser.add_argument("--sep", default=CSV_SEP, metavar="CHAR",
                        help=f"field separator of CSV data files (default {CSV_SEP!r}; ';' as many European offices "
                             "export, 'tab' for tab-separated). A CSV file written from a CSV file keeps it")
    parser.add_argument("--encoding", default=CSV_ENCODING, metavar="NAME",
                        help=f"character encoding of CSV data files (default {CSV_ENCODING}; latin-1 or cp1252 as "
                             "many offices export). A CSV file written from a CSV file keeps it")
    parser.add_argument("--decimal", default=CSV_DECIMAL, metavar="MARK",
                        help=f"decimal mark of the numbers of CSV data files: {CSV_DECIMAL!r} (default) or ',' as many "
                             "offices export (12,5; with --sep ';'). Used where a column is read as numbers (weights, "
                             "numeric covariates, breaks); categories stay text, values are written as they were")


def check_csv_dialect(args: argparse.Namespace) -> None:
    """Refuse a ``--decimal`` that is not ``.`` or ``,``, or ``--decimal ,`` with the comma as the field separator
    (one line), before any work.

    Examples
    --------
    >>> import argparse
    >>> check_csv_dialect(argparse.Namespace(sep=";", decimal=","))
    >>> check_csv_dialect(argparse.Namespace(sep=",", decimal=","))
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --decimal , needs another field separator than ',' (a number such as 12,5 would be two fields): give the file's separator with --sep, such as ';'
    """
    from pramkit.validate import decimal_mark

    if getattr(args, "decimal", None) is not None:
        decimal_mark(args.decimal, getattr(args, "sep", None))


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """``--quiet`` (``-q``): no progress bars or chatter on stderr, the same option for every command.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        A command's parser; the option is parsed into ``quiet`` (``True`` or ``False``).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_quiet(parser)
    >>> parser.parse_args([]).quiet, parser.parse_args(["-q"]).quiet, parser.parse_args(["--quiet"]).quiet
    (False, True, True)
    """
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bars or chatter on stderr")


def note(command: str, text: str | None) -> None:
    """Print ``pramkit COMMAND: note: TEXT`` on stderr (one line); nothing for ``None``.

    Examples
    --------
    >>> import sys, contextlib, io
    >>> buf = io.StringIO()
    >>> with contextlib.redirect_stderr(buf):
    ...     note("estimate", "no release receipt")
    ...     note("estimate", None)
    >>> buf.getvalue()
    'pramkit estimate: note: no release receipt\\n'
    """
    if text:
        print(f"pramkit {command}: note: {one_line(text)}", file=sys.stderr)


def one_line(text: str) -> str:
    """``text`` on one line (line breaks become spaces).

    Examples
    --------
    >>> one_line("first\\n  second")
    'first second'
    """
    return " ".join(str(text).split())


def figure(x: float | int | None, digits: int = 6) -> str:
    """A number as people read it: at most ``digits`` significant digits, no float noise.

    ``3.000000000000001`` prints as ``3``; integers print whole; infinity as
    ``inf``.  JSON output keeps full precision: use this for printed text only.

    Examples
    --------
    >>> figure(3.000000000000001), figure(2.9999999999999987), figure(0.1 + 0.2)
    ('3', '3', '0.3')
    >>> figure(12345678), figure(float("inf")), figure(1.23456789, 3), figure(None)
    ('12345678', 'inf', '1.23', 'n/a')
    """
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    value = float(x)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}g}"


#: What a command's ``files(args)`` returns: the files it reads and the files (or folders) it writes.
Files = tuple[list[Any], list[Any]]


def check_files(inputs: list[Any], outputs: list[Any]) -> None:
    """Refuse, before any work, an output that is one of the command's inputs, or two outputs that are one file.

    :func:`pramkit.cli.main` calls it for every command with what the command's ``files(args)``
    returns (set as the parser's default ``files``), so no command writes over its data, manifest, released file,
    receipt, key file, prior, codebook, rules or distances, whatever ``--force`` says.  Paths are
    compared as :func:`pramkit.atomic.same_file` does: symbolic and hard links to an input are the
    input; an output folder that holds an input is refused too.

    Parameters
    ----------
    inputs : list of path or None
        Every file the command reads (``None`` entries are skipped).
    outputs : list of path or None
        Every file or folder it writes (``None`` entries are skipped).

    Raises
    ------
    ParameterError
        An output is an input (or a link to one, or a folder holding one), or two outputs are
        the same file.

    Examples
    --------
    >>> import os, pathlib, tempfile
    >>> from pramkit.errors import ParameterError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = pathlib.Path(tmp)
    ...     _ = (d / "data.csv").write_text("sex\\nf\\n")
    ...     os.symlink(d / "data.csv", d / "link.csv")
    ...     check_files([d / "data.csv", None], [d / "out.csv", None])   # nothing in common: fine
    ...     for outputs in ([d / "link.csv"], [d / "a.html", d / "." / "a.html"]):
    ...         try:
    ...             check_files([d / "data.csv"], outputs)
    ...         except ParameterError as exc:
    ...             print(str(exc).replace(tmp, "D"))
    the output 'D/link.csv' would overwrite the input 'D/data.csv'; pramkit never does, not even with --force: choose another output name
    two outputs are the same file, 'D/a.html' and 'D/a.html': give them different names
    """
    from pramkit.atomic import refuse_inputs, same_file

    written = [o for o in outputs if o is not None]
    for i, out in enumerate(written):
        refuse_inputs(out, inputs)
        for other in written[:i]:
            if same_file(out, other):
                raise ParameterError(f"two outputs are the same file, {str(other)!r} and {str(out)!r}: "
                                     "give them different names")


def distance_files(specs: Any) -> list[Any]:
    """The files among distance specs (``ordinal``, ``discrete``, ``FILE`` or ``VAR=FILE`` items, or a mapping's values).

    An item with ``=`` gives both readings (the whole item, and what follows ``VAR=``): a file
    that may be read is never written.

    Examples
    --------
    >>> distance_files(["ordinal", "area=areas.csv", "borders.csv"]), distance_files(None)
    (['area=areas.csv', 'areas.csv', 'borders.csv'], [])
    >>> distance_files({"age": "ordinal", "area": "areas.csv"})
    ['areas.csv']
    """
    from pathlib import Path

    if not specs:
        return []
    items = list(specs.values()) if isinstance(specs, dict) else [specs] if isinstance(specs, (str, Path)) else specs
    paths = []
    for item in (str(s) for s in items if isinstance(s, (str, Path))):
        paths += [item, item.partition("=")[2]] if "=" in item else [item]
    return [p for p in paths if p and p.strip().lower() not in ("ordinal", "discrete")]


def comma_names(text: str | None) -> list[str]:
    """The names of a comma-separated flag's value (variables, columns), stripped, empty parts left out.

    Examples
    --------
    >>> comma_names(" age, sex,,"), comma_names(None)
    (['age', 'sex'], [])
    """
    return [] if not text else [name.strip() for name in text.split(",") if name.strip()]


