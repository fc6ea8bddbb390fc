"""Defaults that the command line shows before any library is imported.

:mod:`pramkit.io` uses them; ``pramkit COMMAND --help`` reads them from here,
so that asking for help imports no data library.
"""

#: Default rows per chunk when streaming.
CHUNK_ROWS = 1 << 20
#: Texts read as missing in CSV files besides the empty field (R writes missing values as ``NA``).
NA_VALUES: tuple[str, ...] = ("NA",)
#: The field separator of a CSV file unless told otherwise (``--sep``).
CSV_SEP = ","
#: The character encoding of a CSV file unless told otherwise (``--encoding``; a UTF-8 byte-order mark is skipped).
CSV_ENCODING = "utf-8"
#: The decimal mark of the numbers of a CSV file (``--decimal``): ``"."``, or ``","`` as many offices export.
CSV_DECIMAL = "."
#: The sampling fraction a report assumes when none is given (the file a 5 % sample).
DEFAULT_SAMPLING_FRACTION = 0.05
#: Rows of the NY 2000 sample in the DP paper (the demo's default size).
NY_ROWS = 953_076
#: Keyed replicate releases that estimate the expected contributions after PRAM when the
#: released files are too many to enumerate (:mod:`pramkit.risk.contributions`).
CONTRIBUTION_REPLICATES = 20
#: The donor rules of record swapping (:mod:`pramkit.swap.core`): ``same-parent`` (donors under the
#: same area of the level above; the default) and ``any-area`` (donors from any other area of the swap level,
#: risky donors first: sdcMicro recordSwap's donor pool, each donor a fresh keyed draw).
SWAP_DONOR_RULES: tuple[str, ...] = ("same-parent", "any-area")
#: What a design does with records that break a rule: refuse the file, or keep them exactly (named by
#: the ledger).
RULE_BREAKING = ("error", "keep")
#: The two folders of a release: publishable, and never to be published (a private output, one that names
#: records of the original, is never written inside a folder of the first name).
PUBLIC_FOLDER, PRIVATE_FOLDER = "public", "private"
#: The orders of the rows ``pramkit new-ids`` can give (:func:`pramkit.engine.ids.new_ids`).
NEW_IDS_SHUFFLES: tuple[str, ...] = ("households", "within", "records", "none")
