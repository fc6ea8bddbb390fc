"""SAS special missing values (``.A``-``.Z``, ``._``) in SAS transport (``.xpt``) files.

pyreadstat reads a transport file's special missing values as plain missing and
writes every missing number as ``.``; pramkit keeps them as codes
(:mod:`pramkit.io_stat`), so it reads and writes them here, in the file's bytes.

A transport file (SAS TS-140, versions 5 and 8) describes each variable in a
140-byte NAMESTR record whose bytes 84-87 hold the variable's offset in an
observation (``npos``, big-endian) and bytes 4-5 its length (``nlng``); the
observations follow the 80-byte ``OBS`` header record, each the sum of the
lengths long.  A missing number is stored as its code's character (``.``,
``A``-``Z`` or ``_``) followed by zero bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pramkit.errors import DataError

#: The codes of SAS's special missing values, as pramkit shows them.
SAS_CODES: tuple[str, ...] = tuple(f".{c}" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_RECORD = 80
_NAMESTR = 140


@dataclass(frozen=True)
class XportLayout:
    """Where each observation and variable lies in a transport file.

    Attributes
    ----------
    data_start : int
        The offset of the first observation.
    width : int
        The bytes of one observation.
    offsets : dict
        Variable name -> its offset in an observation.
    lengths : dict
        Variable name -> its length in bytes.
    numeric : dict
        Variable name -> whether it holds numbers.
    """

    data_start: int
    width: int
    offsets: Mapping[str, int]
    lengths: Mapping[str, int]
    numeric: Mapping[str, bool]


def xport_layout(raw: bytes, names: Sequence[str], where: str) -> XportLayout:
    """The layout of a one-member transport file, its variables named ``names`` in file order.

    Parameters
    ----------
    raw : bytes
        The file's bytes.
    names : sequence of str
        The variables' names, in file order (as pyreadstat reads them: a version 8 file may
        hold names longer than the 8 characters of a NAMESTR record).
    where : str
        The file, for messages.

    Returns
    -------
    XportLayout

    Raises
    ------
    DataError
        The file is not a transport file of one member with these variables.

    Examples
    --------
    >>> import pathlib, tempfile, pandas as pd, pyreadstat
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = str(pathlib.Path(d) / "a.xpt")
    ...     pyreadstat.write_xport(pd.DataFrame({"q": [1.0, None], "s": ["a", "b"]}), f)
    ...     layout = xport_layout(pathlib.Path(f).read_bytes(), ["q", "s"], "'a.xpt'")
    >>> layout.width, dict(layout.offsets), dict(layout.numeric)
    (9, {'q': 0, 's': 8}, {'q': True, 's': False})
    """
    head = raw.find(b"HEADER RECORD*******NAMSTV")
    if head < 0:
        head = raw.find(b"HEADER RECORD*******NAMESTR")
    if head < 0 or head % _RECORD:
        raise DataError(f"{where} is not a SAS transport file (no NAMESTR header record)")
    count = int(raw[head + 54:head + 58])
    if count != len(names):
        raise DataError(f"{where}: the NAMESTR header declares {count} variables, pyreadstat read {len(names)}; "
                        "pramkit reads transport files of one member")
    first = head + _RECORD
    offsets, lengths, numeric = {}, {}, {}
    for i, name in enumerate(names):
        rec = raw[first + i * _NAMESTR:first + (i + 1) * _NAMESTR]
        ntype, _, nlng = struct.unpack(">hhh", rec[:6])
        offsets[name], lengths[name], numeric[name] = struct.unpack(">i", rec[84:88])[0], nlng, ntype == 1
    obs = first + count * _NAMESTR
    obs += -obs % _RECORD
    while obs < len(raw) and raw[obs:obs + 23] != b"HEADER RECORD*******OBS":
        obs += _RECORD
    if obs >= len(raw):
        raise DataError(f"{where} is not a SAS transport file (no OBS header record)")
    return XportLayout(obs + _RECORD, sum(lengths.values()), offsets, lengths, numeric)


def _cells(raw: bytes | bytearray, layout: XportLayout, rows: int, name: str) -> np.ndarray:
    """The bytes of variable ``name`` in each of the first ``rows`` observations, one row each."""
    data = np.frombuffer(raw, dtype=np.uint8, count=rows * layout.width, offset=layout.data_start)
    start = layout.offsets[name]
    return data.reshape(rows, layout.width)[:, start:start + layout.lengths[name]]


def read_special_missing(path: str | Path, names: Sequence[str], rows: int) -> dict[str, np.ndarray]:
    """The special missing codes of a transport file's numeric variables.

    Parameters
    ----------
    path : str or pathlib.Path
        A ``.xpt`` file.
    names : sequence of str
        Its variables, in file order.
    rows : int
        Its observations (as pyreadstat read them).

    Returns
    -------
    dict
        Variable -> an object array of its codes (``".A"``, ... ``"._"``; ``None`` elsewhere),
        for the variables that hold at least one.

    Raises
    ------
    DataError
        The file is not a one-member transport file with these variables.

    Examples
    --------
    >>> import pathlib, tempfile, pandas as pd, pyreadstat
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = pathlib.Path(d) / "a.xpt"
    ...     pyreadstat.write_xport(pd.DataFrame({"q": [1.0, None, 2.0]}), str(f))
    ...     write_special_missing(f, {"q": [None, "._", None]}, 3)
    ...     read_special_missing(f, ["q"], 3)["q"].tolist()
    [None, '._', None]
    """
    raw = Path(path).read_bytes()
    layout = xport_layout(raw, names, repr(str(path)))
    out = {}
    for name in names:
        if not layout.numeric[name] or rows == 0:
            continue
        cells = _cells(raw, layout, rows, name)
        lead = cells[:, 0]
        special = ((lead == ord("_")) | ((lead >= ord("A")) & (lead <= ord("Z")))) & (cells[:, 1:] == 0).all(axis=1)
        if special.any():
            codes = np.full(rows, None, dtype=object)
            codes[special] = ["." + chr(c) for c in lead[special]]
            out[name] = codes
    return out


def write_special_missing(path: str | Path, codes: Mapping[str, Any], rows: int) -> None:
    """Write special missing codes into a transport file pyreadstat wrote with ``.`` in their places.

    Parameters
    ----------
    path : str or pathlib.Path
        The ``.xpt`` file (a temporary, changed in place).
    codes : mapping
        Numeric variable -> a sequence of one code or ``None`` per observation (``".A"``-``".Z"``, ``"._"``).
    rows : int
        The observations written.

    Raises
    ------
    DataError
        A code is not a SAS special missing value, or its place does not hold a missing number.

    Examples
    --------
    See :func:`read_special_missing`.
    """
    p = Path(path)
    raw = bytearray(p.read_bytes())
    names = list(codes)
    import pyreadstat

    layout = xport_layout(bytes(raw), pyreadstat.read_xport(str(p), metadataonly=True)[1].column_names,
                          repr(str(path)))
    for name in names:
        column = np.asarray(codes[name], dtype=object)
        where = np.flatnonzero(pd.notna(column))  # the rows with a code
        if not where.size:
            continue
        bad = [c for c in dict.fromkeys(column[where]) if c not in SAS_CODES]
        if bad:
            row = int(where[list(column[where]).index(bad[0])])
            raise DataError(f"column {name!r}, row {row + 1}: {bad[0]!r} is not a SAS special missing value "
                            "(.A-.Z, ._)")
        cells = _cells(raw, layout, rows, name)[where]
        held = (cells[:, 0] != ord(".")) | cells[:, 1:].any(axis=1)
        if held.any():
            row = int(where[np.flatnonzero(held)[0]])
            raise DataError(f"column {name!r}, row {row + 1}: the transport file holds a number where the "
                            f"missing code {column[row]} goes")
        places = layout.data_start + where * layout.width + layout.offsets[name]
        letters = np.frombuffer("".join(c[1] for c in column[where]).encode("ascii"), dtype=np.uint8)
        view = np.frombuffer(raw, dtype=np.uint8)
        view[places] = letters
    with open(p, "r+b") as fh:
        fh.write(raw)
