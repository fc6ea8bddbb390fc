"""A DDI-Codebook 2.5 description of a release (``pramkit inspect M.json --ddi FILE``).

DDI-Codebook (the Data Documentation Initiative's codebook standard, version 2.5, namespace
``ddi:codebook:2_5``) is the metadata data archives exchange about a file.  The description holds:

* ``docDscr``: who wrote the description (pramkit and its version) and when the manifest was made;
* ``stdyDscr/method/dataProcessing`` (type ``disclosure control``): the kind of release (a PRAM release, or a
  file resampled from one: its receipt says so), the perturbation, each variable's epsilon (with its epsilon
  given the structure where the design has strata or kept codes) and the ledger's guarantee sentence, as
  methodology text;
* ``fileDscr``: the released file (with ``--released``: its name, its number of records ``caseQnty`` and of
  columns ``varQnty``);
* ``dataDscr/var``: each perturbed variable with its categories (``catgry/catValu``), and each column
  released as it is (named, without categories: its values are not read); each with the missing codes the
  release was read with (``invalrng/item``, the manifest's ``input.na_values``);
* ``otherMat``: the manifest, referenced by its file name, which holds the PRAM matrices.

Everything comes from the manifest, the released file's header and number of records, and the released
file's receipt: nothing from the original data, so the description may be published beside the release.
Elements are written in the order the schema's sequences require (codeBook: docDscr, stdyDscr, fileDscr,
dataDscr, otherMat; dimensns: caseQnty, varQnty; var: labl, invalrng, txt, catgry), and the document validates
against the DDI Alliance's ``codebook.xsd`` (tests/test_ddi.py).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pramkit.ledger import described_epsilon_words as epsilon_words

#: The DDI-Codebook 2.5 namespace, and where its schema is published.
DDI_NAMESPACE = "ddi:codebook:2_5"
DDI_SCHEMA = "http://www.ddialliance.org/Specification/DDI-Codebook/2.5/XMLSchema/codebook.xsd"
_XSI = "http://www.w3.org/2001/XMLSchema-instance"
#: Characters XML 1.0 cannot hold (a label with one is written with the character's code instead).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(value: Any) -> str:
    """A label as XML text: control characters XML 1.0 refuses are written as ``\\xNN``."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, f"{{{DDI_NAMESPACE}}}{tag}", {k: _text(v) for k, v in attrs.items()})
    if text is not None:
        element.text = _text(text)
    return element


def ddi_codebook(manifest: Any, released: Any = None, *, manifest_name: str | None = None, sep: str = ",",
                 encoding: str = "utf-8") -> str:
    """The DDI-Codebook 2.5 XML text describing a release.

    Parameters
    ----------
    manifest : pramkit.Manifest or path
        The release's manifest; a path is also how ``otherMat`` references it (its file name).
    released : path, optional
        The released file: its name and column names (its header alone) describe the file and the
        columns released as they are.
    manifest_name : str, optional
        The manifest's file name as published, referenced by ``otherMat`` (default: the name of the
        ``manifest`` path, or ``manifest.json`` for a manifest in memory).
    sep, encoding : str
        How a CSV file is written (:func:`pramkit.io.csv_dialect`).

    Returns
    -------
    str
        The XML document (UTF-8 declaration included).

    Raises
    ------
    ManifestError
        The manifest cannot be read.
    DataError
        The released file's columns cannot be read.

    Examples
    --------
    >>> import xml.etree.ElementTree as ET
    >>> from pramkit import Manifest
    >>> from pramkit.design.classic import randomized_response
    >>> text = ddi_codebook(Manifest.of({"sex": randomized_response(["f", "m"], 1.0)}))
    >>> root = ET.fromstring(text.encode("utf-8"))
    >>> root.tag, root.get("version")
    ('{ddi:codebook:2_5}codeBook', '2.5')
    >>> ns = {"ddi": DDI_NAMESPACE}
    >>> [v.get("name") for v in root.iterfind("ddi:dataDscr/ddi:var", ns)]
    ['sex']
    >>> [c.text for c in root.iterfind("ddi:dataDscr/ddi:var/ddi:catgry/ddi:catValu", ns)]
    ['f', 'm']
    """
    from pramkit._version import __version__
    from pramkit.engine.receipt import table_columns
    from pramkit.errors import DataError
    from pramkit.ledger import release_guarantee
    from pramkit.manifest import Manifest

    m = manifest if isinstance(manifest, Manifest) else Manifest.read(manifest)
    columns = None
    if released is not None:
        columns = table_columns(released, sep=sep, encoding=encoding)
        if columns is None:
            raise DataError(f"cannot read the columns of the released file {str(released)!r}: give the file "
                            "`pramkit apply` wrote (CSV, Parquet, Stata, SPSS or SAS)")
    guarantee = release_guarantee(m, columns)
    info = m.describe()
    name = Path(released).name if released is not None else None
    ET.register_namespace("", DDI_NAMESPACE)
    ET.register_namespace("xsi", _XSI)
    root = ET.Element(f"{{{DDI_NAMESPACE}}}codeBook", {
        "version": "2.5", f"{{{_XSI}}}schemaLocation": f"{DDI_NAMESPACE} {DDI_SCHEMA}"})
    title = f"Release {name}" if name else "Release described by its PRAM manifest"

    citation = _sub(_sub(root, "docDscr"), "citation")
    _sub(_sub(citation, "titlStmt"), "titl", f"DDI-Codebook description of: {title}")
    prod = _sub(citation, "prodStmt")
    if getattr(m, "created", None):
        _sub(prod, "prodDate", str(m.created)[:10], date=str(m.created)[:10])
    _sub(prod, "software", "pramkit", version=str(__version__))

    study = _sub(root, "stdyDscr")
    _sub(_sub(_sub(study, "citation"), "titlStmt"), "titl", title)
    method = _sub(study, "method")
    from pramkit.engine.receipt import post_processing_of
    from pramkit.recode import recoding_lines

    for text in _processing(info, guarantee, post_processing_of(released), recoding_lines(m)):
        _sub(method, "dataProcessing", text, type="disclosure control")

    files: dict[str, str] = {}
    if name is not None and columns is not None:
        file_dscr = _sub(root, "fileDscr", ID="F1", URI=name)
        file_txt = _sub(file_dscr, "fileTxt")
        _sub(file_txt, "fileName", name)
        dimensions = _sub(file_txt, "dimensns")
        _sub(dimensions, "caseQnty", str(_records(released, columns, sep=sep, encoding=encoding)))
        _sub(dimensions, "varQnty", str(len(columns)))
        files = {"files": "F1"}

    missing = [str(code) for code in (m.input or {}).get("na_values") or ()]
    _variables(_sub(root, "dataDscr"), info["variables"], list(columns) if columns is not None else [], missing,
               files)

    uri = manifest_name or (Path(manifest).name if not isinstance(manifest, Manifest) else "manifest.json")
    other = _sub(root, "otherMat", type="PRAM manifest", level="study", URI=uri)
    _sub(other, "labl", "PRAM manifest: the transition matrices of the perturbed variables")
    _sub(other, "txt", "The pramkit manifest (JSON, format pramkit-manifest) holds, for each perturbed variable, "
                       "its categories and the matrix M[k, j] = P(released j | original k), with the privacy "
                       "ledger. Analysts read it to correct estimates from the released file.")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _variables(data: ET.Element, variables: list[dict[str, Any]], names: list[str], missing: list[str],
               files: dict[str, str]) -> None:
    """``dataDscr/var``: each column of the released file (``names``; the manifest's variables without one),
    a perturbed one with its categories, each with the codes read as missing (DDI's invalid range)."""
    described = {v["name"]: v for v in variables}
    joint = {c: v for v in variables for c in v.get("columns") or () if c != v["name"]}
    names = list(names)
    for n, v in described.items():  # a variable whose columns the file holds is described by them
        if n not in names and not set(v.get("columns") or [n]) <= set(names):
            names.append(n)
    for i, column in enumerate(names, start=1):
        var = _sub(data, "var", ID=f"V{i}", name=column, **({"intrvl": "discrete"} if column in described else {}),
                   **files)
        _sub(var, "labl", column)
        if missing:
            invalid = _sub(var, "invalrng")
            for code in missing:
                _sub(invalid, "item", VALUE=code)
        if column not in described:
            together = joint.get(column)
            _sub(var, "txt", f"Perturbed by PRAM jointly with the other columns of {together['name']} "
                             f"(epsilon {epsilon_words(together)}); the joint matrix is in the manifest "
                             "(otherMat)." if together else
                             "Released as it is (not perturbed): no epsilon covers this column.")
            continue
        v = described[column]
        _sub(var, "txt", f"Perturbed by PRAM ({v['method']}, epsilon {epsilon_words(v)}); its "
                         "transition matrix is in the manifest (otherMat).")
        for category in v["categories"]:
            _sub(_sub(var, "catgry"), "catValu", str(category))


def _processing(info: dict[str, Any], guarantee: Any, post: dict[str, Any] | None,
                recoded: Sequence[str] = ()) -> list[str]:
    """The methodology texts (``dataProcessing``): the kind of release and its guarantee, then one per variable.

    Examples
    --------
    >>> from pramkit import Manifest
    >>> from pramkit.design.classic import randomized_response
    >>> from pramkit.ledger import release_guarantee
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> texts = _processing(m.describe(), release_guarantee(m, None), {"method": "resample", "release": "r.csv"})
    >>> texts[0][:60]
    'Resampled file (post-processing): computed by pramkit resamp'
    >>> texts[-1]
    'sex: 2 categories, PRAM matrix designed by randomized_response, epsilon 1'
    """
    perturbed = ", ".join(v["name"] for v in info["variables"])
    texts = []
    if post is not None:
        texts.append(f"Resampled file (post-processing): computed by pramkit {post.get('method', 'resample')} from "
                     f"the PRAM release {post.get('release', '')!s} and its manifest alone, with randomness "
                     "independent of the original data; the statement below holds for it unchanged.")
    texts.append(f"Post-Randomisation Method (PRAM): the values of {perturbed} were replaced at random, value k by "
                 "value j with probability M[k, j]; the matrices M are published in the manifest (see otherMat), so "
                 "that frequencies can be estimated without bias from the released file. "
                 f"{guarantee.headline[0].upper() + guarantee.headline[1:]}. {guarantee.sentence}")
    texts += [f"{v['name']}: {len(v['categories'])} categories, PRAM matrix designed by {v['method']}, "
              f"epsilon {epsilon_words(v)}" for v in info["variables"]]
    texts += [f"Recoded before PRAM (global recoding): {line}" for line in recoded]
    return texts


def _records(released: Any, columns: list[str], *, sep: str, encoding: str) -> int:
    """The number of records of the released file (one column read; its values are not looked at)."""
    from pramkit.source import Source

    _, tables = Source.open(released, sep=sep, encoding=encoding).batches(columns[:1])
    return sum(table.num_rows for table in tables)


def write_ddi(manifest: Any, path: str | Path, *, released: Any = None, manifest_name: str | None = None,
              force: bool = False, inputs: tuple[Any, ...] = (), sep: str = ",", encoding: str = "utf-8") -> Path:
    """Write :func:`ddi_codebook` to ``path`` atomically.

    Parameters
    ----------
    manifest : pramkit.Manifest or path
        The release's manifest.
    path : str or Path
        The XML file to write.
    released : path, optional
        The released file (its name and header).
    manifest_name : str, optional
        The manifest's file name as published (:func:`ddi_codebook`).
    force : bool, default False
        Replace an existing file.
    inputs : tuple of paths
        Files the output may never be.
    sep, encoding : str
        How a CSV file is written.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    OutputExistsError, WriteError, ParameterError
        As :func:`pramkit.atomic.write_text_atomic`.

    Examples
    --------
    >>> import tempfile
    >>> from pramkit import Manifest
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     print(write_ddi(m, Path(d) / "release.xml").read_text(encoding="utf-8").splitlines()[1][:39])
    <codeBook xmlns="ddi:codebook:2_5" xmln
    """
    from pramkit.atomic import write_text_atomic

    text = ddi_codebook(manifest, released, manifest_name=manifest_name, sep=sep, encoding=encoding)
    return write_text_atomic(path, text, force=force, inputs=inputs)
