"""Arrow text values to codes and back, one compiled pass per array.

Arrow's hash lookup of text (:func:`pyarrow.compute.index_in`) costs about three
times NumPy's draw of a uniform per value, and its ``take`` of text more than one;
a perturbed column's labels are few and known in advance, so an open-addressing
table of them, built once per codebook, finds each value with one hash of its
bytes and one comparison (:mod:`pramkit.kernel._kernels`), and the released values are
written in one pass, each value's offset and bytes (into room for the longest
label per value, which is then cut to the bytes written).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from pramkit.kernel import _kernels

#: Bytes after the labels' last one, and after the released values' last one (whole words are copied).
PAD = 24

#: Labels of up to this many bytes are written from their records as whole words, without a branch on their
#: length.
HEAD = 24

#: Released text up to this size is written in one pass into room for the longest label per value;
#: beyond it, one pass when the labels' lengths are within a factor of two of their mean, else the
#: bytes are counted first.
ONE_PASS_BYTES = 1 << 24

_INT32_MAX = 2 ** 31 - 1  # the bytes that ``string`` (4-byte) offsets address


def is_utf8(value_type: pa.DataType) -> bool:
    """Whether ``value_type`` is Arrow text (``string`` or ``large_string``).

    Examples
    --------
    >>> is_utf8(pa.large_string()), is_utf8(pa.int64())
    (True, False)
    """
    return pa.types.is_string(value_type) or pa.types.is_large_string(value_type)


def label_records(data: bytes, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The labels as the compiled decoding reads them: 32 bytes each, the label's first :data:`HEAD` bytes
    (zeros past its length), its length and its start in ``data`` (int32), so that writing a value reads one
    place.

    Parameters
    ----------
    data : bytes
        The labels' bytes, followed by at least :data:`PAD` bytes.
    starts, lengths : numpy.ndarray
        Where each label starts in ``data``, and its length (each below 2^31).

    Returns
    -------
    numpy.ndarray of uint8, shape (labels, 32)

    Examples
    --------
    >>> records = label_records(b"northsouth" + bytes(PAD), np.array([0, 5]), np.array([5, 5]))
    >>> bytes(records[1, :HEAD]).rstrip(bytes(1)), records[1, HEAD:].view(np.int32).tolist()  # 5 bytes from byte 5
    (b'south', [5, 5])
    """
    raw = np.frombuffer(data, dtype=np.uint8)
    head = raw[np.asarray(starts)[:, None] + np.arange(HEAD)] * (np.arange(HEAD) < np.asarray(lengths)[:, None])
    tail = np.stack([lengths, starts], axis=1).astype(np.int32).view(np.uint8)
    return np.concatenate([head, tail], axis=1)


def pool_array(size: int, dtype: npt.DTypeLike) -> tuple[pa.Buffer, np.ndarray]:
    """An Arrow buffer of ``size`` items and a writable NumPy view of it (memory from Arrow's pool, which
    keeps freed memory for the next call, where a large NumPy array comes fresh from the system, a page
    fault per 4 KiB).

    Examples
    --------
    >>> buffer, view = pool_array(3, np.intp)
    >>> view[:] = 7
    >>> buffer.size, view.flags.writeable, np.frombuffer(buffer, dtype=np.intp).tolist()
    (24, True, [7, 7, 7])
    """
    buffer = pa.allocate_buffer(size * np.dtype(dtype).itemsize)
    return buffer, np.frombuffer(buffer, dtype=dtype)


class Utf8Labels:
    """A codebook's labels as Arrow text, to find values among them and to write them back.

    Parameters
    ----------
    labels : pyarrow.Array
        Text labels (``string`` or ``large_string``); label ``i`` is code ``i``.
        A null label (the missing category) is never matched, and decodes to null.

    Examples
    --------
    >>> labels = Utf8Labels(pa.array(["north", "south", None, "east"]))
    >>> codes, first_unknown = labels.encode(pa.array(["east", None, "north", "west"]), missing_code=2,
    ...                                      unknown_code=-2)
    >>> codes.tolist(), first_unknown
    ([3, 2, 0, -2], 3)
    >>> labels.encode(pa.array(["south", None, "a value longer than twelve bytes"], pa.string_view()),
    ...               missing_code=2, unknown_code=-2)[0].tolist()
    [1, 2, -2]
    >>> labels.decode(np.array([1, -1, 2, 3]), pa.large_string()).to_pylist()
    ['south', None, None, 'east']
    """

    def __init__(self, labels: pa.Array) -> None:
        self.size = len(labels)
        width = np.int64 if pa.types.is_large_string(labels.type) else np.int32
        self.offsets = np.frombuffer(labels.buffers()[1], dtype=width)[labels.offset:][:self.size + 1].astype(np.int64)
        data = labels.buffers()[2]
        # the bytes then PAD zeros (:mod:`pramkit.kernel._kernels` reads and writes whole words)
        self.data = (b"" if data is None else data.to_pybytes()) + bytes(PAD)
        self.null = np.asarray(labels.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        self._valid = None if not self.null.any() else np.append(~self.null, False)  # by code, -1 the last
        # each label as decoding writes it, by code + 1 (entry 0 for code -1: nothing): its first HEAD bytes
        # (zeros past its length), its length and where it starts (:func:`label_records`; labels of more
        # than 2 GiB in all have none, and are written by Arrow)
        starts = np.append(0, self.offsets[:-1])
        lengths = np.append(0, np.where(self.null, 0, np.diff(self.offsets)))
        self.records = label_records(self.data, starts, lengths) if len(self.data) <= _INT32_MAX else None
        self._longest = int(lengths.max())
        self._mean = float(lengths[1:][~self.null].mean()) if (~self.null).any() else 0.0
        # slots of 32 bytes (a label's first 16 bytes, length and code), at most 1/4 full, and for a few
        # labels room enough (up to 32 KiB) that a seed places each in its own slot
        slots = 1 << max(4, (4 * self.size).bit_length(), min(64 * self.size, 1024).bit_length())
        self.slots = np.empty(4 * slots, dtype=np.uint64)
        self.seed = _kernels.utf8_index(self.offsets, self.data, (~self.null).astype(np.uint8), self.slots)

    def encode(self, values: pa.Array, *, missing_code: int, unknown_code: int) -> tuple[np.ndarray, int]:
        """The code of each value: its label's position, ``missing_code`` if null, ``unknown_code`` if no label.

        Parameters
        ----------
        values : pyarrow.Array
            Text values (``string``, ``large_string`` or ``string_view``, possibly a slice); views
            are read where they are, with their data buffers (polars' text is views).
        missing_code, unknown_code : int
            The codes of a null value and of a value that is no label.

        Returns
        -------
        codes : numpy.ndarray
            One ``intp`` per value.
        first_unknown : int
            The position of the first value that is no label, or ``-1``.
        """
        _, out = pool_array(len(values), np.intp)
        if not len(values):
            return out, -1
        if pa.types.is_string_view(values.type):
            validity, views, *data = values.buffers()
            first_unknown = _kernels.utf8_encode_views(
                views, values.offset, validity if values.null_count else None, tuple(data), self.offsets, self.data,
                self.slots, self.seed, missing_code, unknown_code, out)
            return out, first_unknown
        validity, offsets, data = values.buffers()
        first_unknown = _kernels.utf8_encode(
            offsets, 8 if pa.types.is_large_string(values.type) else 4, values.offset,
            validity if values.null_count else None, data or b"", self.offsets, self.data, self.slots, self.seed,
            missing_code, unknown_code, out)
        return out, first_unknown

    def encode_objects(self, values: np.ndarray, na: tuple = ()) -> pa.Array | None:
        """The codes of a NumPy array of Python strings, as Arrow ``int64`` (null where a value is missing).

        A missing value is ``None``, a float NaN or one of ``na`` (as pandas
        reads an object column).  Each distinct string object is looked up
        once: its code is remembered by address.

        Parameters
        ----------
        values : numpy.ndarray of object
            The values (1-D).
        na : tuple
            Other objects that stand for a missing value (``pandas.NA``, ``pandas.NaT``).

        Returns
        -------
        pyarrow.Array or None
            ``None`` if a value is neither missing nor the text of a label
            (another type, or text that is no label).

        Examples
        --------
        >>> labels = Utf8Labels(pa.array(["north", "south"]))
        >>> labels.encode_objects(np.array(["south", None, "north", float("nan")], dtype=object)).to_pylist()
        [1, None, 0, None]
        >>> labels.encode_objects(np.array(["south", "west"], dtype=object)) is None
        True
        """
        items = np.ascontiguousarray(values, dtype=object)
        if not items.size:
            return pa.array([], type=pa.int64())
        codes, view = pool_array(items.size, np.int64)
        validity, bits = pool_array((items.size + 7) // 8, np.uint8)
        first, nulls = _kernels.object_encode(items, self.offsets, self.data, self.slots, self.seed, tuple(na), view,
                                              bits)
        if first >= 0:
            return None
        return pa.Array.from_buffers(pa.int64(), items.size, [validity if nulls else None, codes], null_count=nulls)

    def decode(self, codes: np.ndarray, value_type: pa.DataType) -> pa.Array | None:
        """The labels of ``codes`` (``-1``: null) as an Arrow array of ``value_type``.

        Parameters
        ----------
        codes : numpy.ndarray
            Codes in ``-1..S-1``.
        value_type : pyarrow.DataType
            ``string`` or ``large_string``.

        Returns
        -------
        pyarrow.Array or None
            ``None`` if the labels would pass the 2 GiB that ``string`` offsets address
            (``large_string`` has no such limit), or if the labels themselves pass 2 GiB.
        """
        if self.records is None:
            return None
        c = np.ascontiguousarray(codes, dtype=np.intp)
        width = 8 if pa.types.is_large_string(value_type) else 4
        offsets, view = pool_array(c.size + 1, np.int64 if width == 8 else np.int32)
        room = c.size * self._longest
        if room > max(ONE_PASS_BYTES, 2 * c.size * self._mean) or (width == 4 and room > _INT32_MAX):
            room = _kernels.utf8_size(c, self.records)[0]  # labels of very different lengths: count first
            if width == 4 and room > _INT32_MAX:
                return None
        data = pa.allocate_buffer(room + PAD, resizable=True)
        total, nulls = _kernels.utf8_decode(c, self.records, self.data, view, width, data)
        data.resize(total + PAD)  # its size, not its memory: the bytes past it were never written
        validity = None
        if self._valid is not None or nulls:
            valid = c >= 0 if self._valid is None else self._valid[c]
            nulls = c.size - int(np.count_nonzero(valid))
            if nulls:
                validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        return pa.Array.from_buffers(value_type, c.size, [validity, offsets, data], null_count=nulls)
