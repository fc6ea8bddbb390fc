"""What the published file guarantees as a whole: amplification by sampling and by shuffling.

pramkit states a local epsilon per record.  Two properties of the released
*file* strengthen it, each under conditions that this module states in words:

* **Sampling** (Balle, Barthe and Gaboardi 2018, "Privacy amplification by
  subsampling: tight analyses via couplings and divergences", Table 1).  When
  the file is a secret, data-independent sample of a population, an
  epsilon-DP release of the sample is ``ln(1 + q (e^eps - 1))``-DP for the
  population when the sample is ``m`` of ``N`` drawn without replacement
  (``q = m / N``; neighbouring populations: one person's values replaced,
  pramkit's unit; their theorem for sampling without replacement under
  substitution).  A Poisson sample is declared with its population: given its
  size ``n`` (which no value of the data decides) it is a simple random sample
  of ``n`` of ``N``, so the figure holds for the file with ``q = n / N``.  Their
  Poisson row needs a release that is DP when a person is added or removed, which
  a file of records is not (its row count moves), and without ``N`` no pure
  figure holds: a Poisson sample that happens to hold everyone is not amplified.
  A stratified design samples each stratum on its own: the bound takes the
  largest rate.  The figure is for the released records as a set: a file whose
  rows follow the population's order tells who was drawn and is amplified less
  (``tests/test_amplification.py`` enumerates both), so the condition includes
  rows in random order (``apply --shuffle``).  Allocation that depends on the data
  (sample sizes from the population's counts) can degrade privacy (Bun,
  Drechsler, Gaboardi, McMillan and Sarathy 2020, "Controlling privacy loss
  in sampling schemes"), so the rates must be fixed before the data are seen.
* **Shuffling** (Feldman, McMillan and Talwar 2021, "Hiding among the clones",
  Theorem 3.2 and Appendix E).  When every released column is randomized by an
  eps0-DP local randomizer (or public) and the rows are in a random order,
  the file is ``(eps, delta)``-DP for the central ``eps`` bounded here.  Each
  of the other ``n - 1`` records is, with probability ``w`` (``e^-eps0`` for
  any eps0-DP randomizer), a "clone" that outputs a draw from one of the two
  distributions the target's two possible values produce.  The release is then
  a post-processing of the pair ``P = (A + D, C - A + 1 - D)``,
  ``Q = (A + 1 - D, C - A + D)`` with ``C ~ Bin(n - 1, w)``,
  ``A ~ Bin(C, 1/2)`` and ``D ~ Bern(e^eps0 / (e^eps0 + 1))``; ``delta(eps)``
  is the hockey-stick divergence of that pair, computed here exactly up to
  rounding (binomial tails, not the paper's grid), with a margin that covers
  the rounding, and ``eps`` is found by a bisection that keeps the side where
  ``delta(eps) <= delta`` holds.

The matrix variant (:func:`by_shuffling_matrix`) uses the total-variation
parameter ``beta`` of the matrix, the largest total-variation distance between
two of its rows.  With ``p = e^eps0``, write the rows of the target's two values
as ``m_b = (1 - gamma) mu + gamma nu_b`` with ``gamma = beta (p + 1) / (p - 1)``,
where ``nu_0, nu_1`` are a binary randomized response with ratio ``p`` between
the normalised parts ``(m_0 - m_1)_+`` and ``(m_1 - m_0)_+`` (valid because
``m_0 <= p m_1``); every other row is at least ``m_b / p`` entrywise, hence
contains ``beta / (p - 1)`` of each part: clones with ``w = 2 beta / (p - 1)``.
The target is informative with probability ``gamma`` (a public coin), so
``delta(eps)`` is ``gamma`` times the divergence of the pair above with that
``w``.  At the largest ``beta`` an eps0-DP matrix can have,
``(p - 1) / (p + 1)``, this is ``gamma = 1`` and ``w = 2 / (p + 1)``, the
figure for randomized response.  The smaller of the two bounds is returned.

What ``apply --shuffle`` states is the tighter bound of :mod:`pramkit.privacy.shuffle_bound`
(clones whose probability is read off the PRAM matrices, of one variable or of several, and two
bounds per pair of values), of which the general one here is a case, so never above it but for
rounding (:func:`release_guarantees`, :func:`record_clones`).

Examples
--------
>>> f"{by_sampling(3.0, 0.05):.4f}"
'0.6700'
>>> bound = shuffling_bound(4.0, 100_000, 1e-6)
>>> 0.1675 <= bound.lower <= bound.upper <= 0.1728       # the paper's published interval
True
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as dataclasses_replace
from decimal import Decimal, localcontext
from typing import Any, overload

import numpy as np
from numpy.typing import ArrayLike

from pramkit.errors import DataError, ManifestError, ParameterError
from pramkit.privacy.exact import DIGITS, float_up
from pramkit.validate import check_fraction

#: Resolution of the bisection over epsilon (nats): the bound is a multiple of it, rounded up.
GRID = 2.0 ** -32
#: Relative margin on every computed delta: binomial tails and the matrix's total variation are
#: accurate to about 1e-14 relative, so a computed delta times ``1 + MARGIN`` is above the exact one.
MARGIN = 1e-9
#: Absolute margin per binomial term summed (the rounding of tiny tails).
TINY = 1e-15
#: The largest matrix whose total-variation parameter is computed (pairwise rows: O(S^3)).
MAX_TV_CATEGORIES = 600
#: The default delta of the central guarantee of a shuffled release.
DEFAULT_DELTA = 1e-6


def by_sampling(epsilon: float, q: float) -> float:
    """The epsilon of an epsilon-DP release of a secret sample drawn at rate ``q``, rounded up.

    ``ln(1 + q (e^eps - 1))`` (Balle, Barthe and Gaboardi 2018, Table 1):
    Poisson sampling at rate ``q``, or ``m`` of ``N`` without replacement with
    ``q = m / N``.

    Parameters
    ----------
    epsilon : float
        The release's epsilon on the sample (nats, finite or ``inf``).
    q : float
        The sampling rate, in (0, 1].

    Returns
    -------
    float
        The amplified epsilon, never below the exact value (``inf`` stays ``inf``).

    Raises
    ------
    ParameterError
        ``q`` outside (0, 1] or ``epsilon`` negative.

    Examples
    --------
    >>> f"{by_sampling(3.0, 0.05):.4f}", by_sampling(2.0, 1.0) >= 2.0, by_sampling(math.inf, 0.5)
    ('0.6700', True, inf)
    """
    rate = check_fraction(q)
    if not (isinstance(epsilon, (int, float)) and epsilon >= 0):
        raise ParameterError(f"epsilon must be a non-negative number, got {epsilon!r}")
    if math.isinf(epsilon):
        return math.inf
    with localcontext() as ctx:
        ctx.prec = DIGITS + max(0, -Decimal(epsilon).adjusted())   # e^eps - 1 keeps 40 digits however small
        # 40 digits are within 1e-38 of the exact value: the nudge keeps the bound above it
        return float_up((1 + Decimal(rate) * (Decimal(epsilon).exp() - 1)).ln() * (1 + Decimal("1e-30")))


@dataclass(frozen=True)
class Sampling:
    """A secret, data-independent sampling design of the released file.

    Parameters
    ----------
    design : str
        ``"poisson"`` (each person independently at rate ``q``), ``"srswor"``
        (``sample`` of ``population`` without replacement) or ``"stratified"``
        (one rate per stratum).
    rates : tuple of float
        The rate, or each stratum's rate (for ``"poisson"``, the declared rate).
    population : int, optional
        ``N`` of a simple random sample or of a Poisson sample.
    sample : int, optional
        ``m`` of a simple random sample, or the size ``n`` of a Poisson sample.

    Examples
    --------
    >>> s = Sampling.parse("stratified:0.02,0.05")
    >>> s.rate, s.design
    (0.05, 'stratified')
    >>> Sampling.parse("srswor:500/10000").rate
    0.05
    >>> Sampling.from_dict(s.to_dict()) == s
    True
    """

    design: str
    rates: tuple[float, ...]
    population: int | None = None
    sample: int | None = None

    def __post_init__(self) -> None:
        if self.design not in ("poisson", "srswor", "stratified"):
            raise ParameterError(f"sampling design {self.design!r} is not one of poisson, srswor, stratified")
        sizes = (self.sample, self.population)
        if any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) for x in sizes if x is not None):
            raise ParameterError(f"the sample and the population must be whole numbers, got {sizes}")
        if self.design == "stratified" and sizes != (None, None):
            raise ParameterError("a stratified design states its rates only (no sample or population)")
        if self.design == "srswor" and None in sizes:
            raise ParameterError("a simple random sample states its sample M and population N (srswor:M/N)")
        if (self.sample is None) != (self.population is None):
            raise ParameterError("a sample size needs its population, and a population its sample size")
        if self.sample is not None and self.population is not None:
            if self.sample < 1:
                raise ParameterError(f"the sample must hold at least one record, got {self.sample}")
            if self.population < self.sample:
                raise ParameterError(f"the population N = {self.population:,} is smaller than the file "
                                     f"({self.sample:,} records); give the size of the population the file was "
                                     "drawn from")
        rates = tuple(check_fraction(q) for q in self.rates)
        if not rates:
            raise ParameterError("a sampling design needs at least one rate")
        object.__setattr__(self, "rates", rates)
        if self.design == "srswor" and rates != (self.sample / self.population,):  # type: ignore[operator]
            raise ParameterError(f"the rate of a simple random sample of {self.sample} of {self.population} is "
                                 f"M / N, not {rates[0]!r}")

    @property
    def statement(self) -> str:
        """The design as ``--sampling`` writes it (with ``--population N`` for a Poisson sample).

        Examples
        --------
        >>> Sampling.parse("srswor:500/100000").statement
        'srswor:500/100000'
        """
        if self.design == "srswor":
            return f"srswor:{self.sample}/{self.population}"
        rates = ",".join(f"{q:g}" for q in self.rates)
        return f"{self.design}:{rates}" + (f" --population {self.population}" if self.population else "")

    def check_rows(self, rows: int, file: str, *, stated: str | None = None) -> None:
        """Refuse a design whose sample is not the file's ``rows`` records.

        ``M`` of ``srswor:M/N`` and the size ``n`` of a Poisson sample are the file's row
        count: the figure ``ln(1 + q (e^eps - 1))`` with ``q = M / N`` holds for a file of
        ``M`` records, and a smaller ``M`` states a smaller epsilon than the file has.  A
        stratified design states rates only; there is nothing to check.

        Parameters
        ----------
        rows : int
            The file's row count.
        file : str
            The file, as the message names it.
        stated : str, optional
            Where the design was stated (a manifest): the error is then a
            :class:`~pramkit.errors.DataError` saying to apply the manifest to its file;
            ``None``: a flag, a :class:`~pramkit.errors.ParameterError` saying what to write.

        Raises
        ------
        ParameterError, DataError
            The sample is not ``rows`` records, or the population is smaller than ``rows``.

        Examples
        --------
        >>> Sampling.parse("srswor:1031/100000").check_rows(1031, "'c.csv'")
        >>> Sampling.parse("srswor:500/100000").check_rows(1031, "'c.csv'")
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: --sampling srswor:500/100000 states a sample of 500 records but 'c.csv' has 1,031 rows: M is the file's row count (write --sampling srswor:1031/100000, or --population 100000)
        """
        if self.sample is None or self.sample == rows:
            return
        if stated is not None:
            raise DataError(f"{stated} states a sample of {self.sample:,} records (input.sampling: "
                            f"{self.statement}) but {file} has {rows:,} rows: apply it to the file it was designed "
                            "for, or design again for this file")
        if self.design == "poisson":
            raise ParameterError(f"--sampling {self.statement} is of a sample of {self.sample:,} records but {file} "
                                 f"has {rows:,} rows: the size n of a Poisson sample is the file's row count")
        raise ParameterError(f"--sampling {self.statement} states a sample of {self.sample:,} records but {file} has "
                             f"{rows:,} rows: M is the file's row count (write --sampling "
                             f"srswor:{rows}/{self.population}, or --population {self.population})")

    @property
    def rate(self) -> float:
        """The rate of the figure: the largest stratum rate, ``m / N`` of a simple random sample, and the
        realised ``n / N`` of a Poisson sample (given its size, a simple random sample of ``n`` of ``N``).

        Examples
        --------
        >>> Sampling("poisson", (0.05,), population=100_000, sample=4_900).rate
        0.049
        """
        if self.design != "poisson":
            return max(self.rates)
        if not (self.sample and self.population):
            raise ParameterError("a Poisson sample's figure needs the population it was drawn from (--population N)")
        return self.sample / self.population

    @classmethod
    def parse(cls, text: str) -> Sampling:
        """A design from ``poisson:Q``, ``srswor:M/N`` or ``stratified:Q1,Q2,...``.

        Raises
        ------
        ParameterError
            Another form, or a rate outside (0, 1], or ``N`` below ``M``.

        Examples
        --------
        >>> Sampling.parse("poisson:0.05").rates
        (0.05,)
        """
        m = re.fullmatch(r"\s*(poisson|srswor|stratified)\s*:\s*(.+?)\s*", str(text))
        if m is None:
            raise ParameterError(f"--sampling {text!r}: write poisson:Q, srswor:M/N or stratified:Q1,Q2,...")
        design, value = m.groups()
        if design == "srswor":
            parts = value.split("/")
            if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
                raise ParameterError(f"--sampling {text!r}: write srswor:M/N with whole numbers M and N")
            return cls.without_replacement(int(parts[0]), int(parts[1]))
        try:
            rates = tuple(float(x) for x in value.split(","))
        except ValueError:
            raise ParameterError(f"--sampling {text!r}: the rates must be numbers in (0, 1]") from None
        if design == "poisson" and len(rates) != 1:
            raise ParameterError(f"--sampling {text!r}: poisson takes one rate (stratified:Q1,Q2 for several)")
        return cls(design, rates)

    @classmethod
    def without_replacement(cls, sample: int, population: int) -> Sampling:
        """``sample`` of ``population`` without replacement (``--population N`` with the file's rows).

        Raises
        ------
        ParameterError
            ``population`` smaller than ``sample``, or ``sample`` below 1.

        Examples
        --------
        >>> Sampling.without_replacement(953_076, 19_378_102).rate < 0.05
        True
        """
        return cls("srswor", (sample / max(population, 1),), population=population, sample=sample)

    def conditions(self) -> str:
        """The conditions of the sampled guarantee, in words.

        Examples
        --------
        >>> "secret" in Sampling.parse("srswor:100/1000").conditions()
        True
        """
        who = {
            "poisson": f"each person of the population of {self.population or 0:,} was included independently at "
                       f"rate {max(self.rates):g}, and given its size the sample is a simple random sample of "
                       f"{self.sample or 0:,} of them (q = {self.rate:.6g}; the size depends on no value of the data; "
                       "neighbouring populations: one person's values replaced)",
            "srswor": f"the file is a simple random sample without replacement of {self.sample:,} of "
                      f"{self.population:,} persons (q = {self.rate:.6g}; neighbouring populations: one person's "
                      "values replaced)" if self.sample else f"a simple random sample at rate {self.rate:g}",
            "stratified": f"each stratum was sampled without replacement on its own at rates "
                          f"{', '.join(f'{q:g}' for q in self.rates)} (neighbouring populations: one person's values "
                          "replaced within the stratum); "
                          f"the bound takes the largest, {self.rate:g}, and holds only if the rates were fixed "
                          "before the data were seen (an allocation computed from the population's counts can "
                          "degrade privacy: Bun et al. 2020)",
        }[self.design]
        return (f"{who}; the sampling used no value of the data, which persons were drawn is secret, and the "
                "file's row order says nothing about who was drawn (rows in random order: apply --shuffle) "
                "(Balle, Barthe and Gaboardi 2018)")

    def to_dict(self) -> dict[str, Any]:
        """The design as JSON values (the manifest's ``input["sampling"]``)."""
        return {"design": self.design, "rates": list(self.rates),
                **({"population": self.population, "sample": self.sample} if self.sample else {})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Sampling:
        """The design from :meth:`to_dict` (a manifest's ``input["sampling"]``), checked as :meth:`parse` checks it.

        A Poisson design needs its population and sample size (its figure is given them), and a
        simple random sample's rate is ``M / N``.

        Raises
        ------
        ParameterError
            A field missing or of the wrong type, a rate outside (0, 1], ``N`` below ``M``, a rate
            that is not ``M / N``, or a Poisson design without its population.

        Examples
        --------
        >>> Sampling.from_dict({"design": "srswor", "rates": [0.005], "population": 100000, "sample": 1031})
        Traceback (most recent call last):
        ...
        pramkit.errors.ParameterError: the rate of a simple random sample of 1031 of 100000 is M / N, not 0.005
        """
        if not isinstance(d, Mapping) or not isinstance(d.get("rates"), list) or not set(d) <= {
                "design", "rates", "population", "sample"}:
            raise ParameterError("a sampling design is an object with the fields design, rates, population, sample")
        if any(isinstance(q, bool) or not isinstance(q, (int, float)) for q in d["rates"]):
            raise ParameterError(f"the rates must be numbers in (0, 1], got {d['rates']!r}")
        design = cls(d.get("design"), tuple(d["rates"]), d.get("population"), d.get("sample"))  # type: ignore[arg-type]
        if design.design == "poisson" and (design.sample is None or len(design.rates) != 1):
            raise ParameterError("a Poisson design states one rate, its population and its sample size")
        return design


@dataclass(frozen=True)
class ShuffleBound:
    """The central ``(epsilon, delta)`` of a shuffled release of ``n`` eps0-DP records.

    ``upper`` is a guaranteed upper bound (what the ledger states); ``lower`` is a
    lower bound on the same numerical bound (the exact divergence lies between).
    """

    epsilon0: float
    n: int
    delta: float
    upper: float
    lower: float
    closed_form: float | None = None


def _tail(c: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``P(Bin(c, 1/2) >= t)`` elementwise."""
    from scipy.special import bdtrc

    k = np.minimum(t - 1.0, c)
    return np.where(k >= c, 0.0, bdtrc(np.maximum(k, -1.0), c.astype(np.int64), 0.5))


def _pair_delta(c: np.ndarray, eps: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Upper and lower bounds of the hockey-stick divergence ``D_{e^eps}(P_c || Q_c)`` for each ``c``.

    ``P_c(x) = alpha b(x - 1) + (1 - alpha) b(x)`` and ``Q_c(x) = (1 - alpha) b(x - 1) + alpha b(x)``,
    ``b`` the law of ``Bin(c, 1/2)``.  Their ratio increases with ``x``, so the divergence is the
    sum over ``x >= t*`` for the cutoff ``t*``; the upper bound takes the largest of the sums at
    ``t* - 1, t*, t* + 1`` (a cutoff off by one through rounding only lowers the sum), the lower
    bound the sum at ``t*`` (any cutoff gives a lower bound).
    """
    e = math.exp(eps)
    a = alpha - e * (1.0 - alpha)           # coefficient of P(B >= t - 1)
    b = (1.0 - alpha) - e * alpha           # coefficient of P(B >= t)
    if a <= 0:
        zero = np.zeros(c.shape)
        return zero, zero
    k = -b / a
    cut = np.floor(k * (c + 1.0) / (1.0 + k)) + 1.0
    tails = [_tail(c, cut + shift) for shift in (-2.0, -1.0, 0.0, 1.0)]
    sums = [a * tails[i] + b * tails[i + 1] for i in range(3)]
    upper = np.maximum(np.maximum(sums[0], sums[1]), np.maximum(sums[2], 0.0))
    return np.minimum(upper, 1.0), np.maximum(sums[1], 0.0)


@dataclass(frozen=True)
class _Clones:
    """The clone reduction: ``C ~ Bin(n - 1, w)`` over a range that holds all but ``outside`` of its mass."""

    alpha: float
    gamma: float
    c: np.ndarray
    weights: np.ndarray
    outside: float

    @classmethod
    def of(cls, n: int, w: float, alpha: float, gamma: float, delta: float) -> _Clones:
        from scipy.stats import binom

        tau = delta * 1e-4
        lo, hi = (int(x) for x in (binom.ppf(tau, n - 1, w), binom.isf(tau, n - 1, w)))
        lo, hi = max(lo, 0), min(max(hi, lo), n - 1)
        c = np.arange(lo, hi + 1, dtype=float)
        outside = float(binom.cdf(lo - 1, n - 1, w) + binom.sf(hi, n - 1, w)) if lo > 0 or hi < n - 1 else 0.0
        return cls(alpha, gamma, c, binom.pmf(c, n - 1, w), outside)

    def delta(self, eps: float) -> tuple[float, float]:
        """Upper and lower bounds of ``delta(eps)`` of the mixture."""
        up, low = _pair_delta(self.c, eps, self.alpha)
        upper = (math.fsum(self.weights * up) + self.outside) * (1 + MARGIN) + TINY * self.c.size
        lower = math.fsum(self.weights * low) * (1 - MARGIN) - TINY * self.c.size
        return min(self.gamma * upper * (1 + MARGIN), 1.0), max(self.gamma * lower * (1 - MARGIN), 0.0)


def _search(clones: _Clones, epsilon0: float, delta: float) -> tuple[float, float]:
    """Bisection on the grid :data:`GRID`: the smallest grid epsilon whose upper delta is at most
    ``delta`` (never above ``epsilon0``, which post-processing always gives), and the largest grid
    epsilon whose lower delta exceeds ``delta``."""
    top = math.ceil(epsilon0 / GRID)

    def first(test) -> int:  # the smallest k in [0, top] with test(k) true, test monotone; top if none
        lo, hi = -1, top
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if test(mid) else (mid, hi)
        return hi

    up = first(lambda k: clones.delta(k * GRID)[0] <= delta)
    low = first(lambda k: clones.delta(k * GRID)[1] <= delta) - 1
    return min(up * GRID, epsilon0), max(low, 0) * GRID


def _check(epsilon0: Any, n: Any, delta: Any) -> tuple[float, int, float]:
    if isinstance(epsilon0, bool) or not isinstance(epsilon0, (int, float)) or not epsilon0 >= 0:
        raise ParameterError(f"the local epsilon must be a non-negative number, got {epsilon0!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ParameterError(f"the number of shuffled records n must be a whole number of at least 1, got {n!r}")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise ParameterError(f"delta must lie strictly between 0 and 1, got {delta!r}")
    return float(epsilon0), int(n), float(delta)


def shuffling_bound(epsilon0: float, n: int, delta: float = DEFAULT_DELTA) -> ShuffleBound:
    """The numerical bound of Feldman, McMillan and Talwar (2021) for ``n`` shuffled eps0-DP records.

    Parameters
    ----------
    epsilon0 : float
        The local epsilon of each record (nats).
    n : int
        Records shuffled together.
    delta : float
        The central delta.

    Returns
    -------
    ShuffleBound
        ``upper`` (guaranteed), ``lower`` and the closed form where it applies.

    Raises
    ------
    ParameterError
        A negative epsilon, ``n`` below 1 or ``delta`` outside (0, 1).

    Examples
    --------
    >>> b = shuffling_bound(4.0, 100_000, 1e-6)
    >>> round(b.upper, 4), b.lower <= b.upper <= b.closed_form
    (0.1698, True)
    """
    epsilon0, n, delta = _check(epsilon0, n, delta)
    closed = closed_form_shuffling(epsilon0, n, delta)
    if math.isinf(epsilon0) or epsilon0 == 0 or n == 1:
        return ShuffleBound(epsilon0, n, delta, epsilon0, epsilon0 if n == 1 else 0.0, closed)
    p = math.exp(epsilon0)
    clones = _Clones.of(n, 1.0 / p, p / (p + 1.0), 1.0, delta)
    upper, lower = _search(clones, epsilon0, delta)
    return ShuffleBound(epsilon0, n, delta, upper, min(lower, upper), closed)


def by_shuffling(epsilon0: float, n: int, delta: float = DEFAULT_DELTA) -> float:
    """A guaranteed upper bound on the central epsilon of ``n`` shuffled eps0-DP records.

    :func:`shuffling_bound`'s ``upper``.

    Examples
    --------
    >>> 0.1675 <= by_shuffling(4.0, 100_000, 1e-6) <= 0.1728
    True
    """
    return shuffling_bound(epsilon0, n, delta).upper


def closed_form_shuffling(epsilon0: float, n: int, delta: float) -> float | None:
    """The closed-form bound of Feldman, McMillan and Talwar (2021), Theorem 3.1, where it applies.

    ``ln(1 + (e^eps0 - 1) / (e^eps0 + 1) (8 sqrt(e^eps0 ln(4 / delta)) / sqrt(n) + 8 e^eps0 / n))``
    for ``eps0 <= ln(n / (16 ln(2 / delta)))``; ``None`` outside that range.

    Examples
    --------
    >>> round(closed_form_shuffling(4.0, 100_000, 1e-6), 4), closed_form_shuffling(8.0, 1000, 1e-6)
    (0.5346, None)
    """
    if n < 2 or not math.isfinite(epsilon0) or epsilon0 > math.log(n / (16 * math.log(2 / delta))):
        return None
    p = math.exp(epsilon0)
    inner = 8 * math.sqrt(p * math.log(4 / delta)) / math.sqrt(n) + 8 * p / n
    return math.log1p((p - 1) / (p + 1) * inner)


def matrix_total_variation(matrix: ArrayLike) -> float:
    """The largest total-variation distance between two rows of a row-stochastic matrix.

    Parameters
    ----------
    matrix : array-like, shape (S, S)

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        More than :data:`MAX_TV_CATEGORIES` rows.

    Examples
    --------
    >>> matrix_total_variation([[0.8, 0.2], [0.3, 0.7]])
    0.5
    """
    m = np.asarray(matrix, dtype=float)
    if m.shape[0] > MAX_TV_CATEGORIES:
        raise ParameterError(f"the total-variation parameter is computed for at most {MAX_TV_CATEGORIES} "
                             f"categories, not {m.shape[0]}")
    return max((0.5 * float(np.abs(m[i + 1:] - m[i]).sum(axis=1).max()) for i in range(m.shape[0] - 1)),
               default=0.0)


def by_shuffling_matrix(matrix: ArrayLike, n: int, delta: float = DEFAULT_DELTA) -> float:
    """A guaranteed upper bound on the central epsilon of ``n`` shuffled records perturbed by ``matrix``.

    The smaller of :func:`by_shuffling` at the matrix's epsilon and the bound through its
    total-variation parameter (module docstring).

    Parameters
    ----------
    matrix : array-like or PramMatrix, shape (S, S)
        ``M[k, j] = P(Z = j | X = k)``, at most :data:`MAX_TV_CATEGORIES` categories.
    n : int
        Records shuffled together.
    delta : float
        The central delta.

    Returns
    -------
    float

    Examples
    --------
    Randomized response on 10 categories at eps0 = 4: the clones are more frequent than for
    a general eps0-DP randomizer, so the bound is lower.

    >>> from pramkit.design.classic import randomized_response
    >>> m = randomized_response(list(range(10)), 4.0)
    >>> by_shuffling_matrix(m, 100_000, 1e-6) < by_shuffling(4.0, 100_000, 1e-6)
    True
    """
    from pramkit.matrix import PramMatrix
    from pramkit.privacy.epsilon import matrix_epsilon

    dense = matrix.matrix if isinstance(matrix, PramMatrix) else np.asarray(matrix, dtype=float)
    eps0 = matrix_epsilon(dense)
    general = by_shuffling(eps0, n, delta)
    _, n, delta = _check(eps0, n, delta)
    beta = matrix_total_variation(dense)
    if beta == 0:
        return 0.0
    if math.isinf(eps0) or n == 1:
        return general
    pm1 = math.expm1(eps0)
    p = pm1 + 1.0
    beta = min(beta, pm1 / (p + 1.0))
    clones = _Clones.of(n, min(2.0 * beta / pm1, 1.0), p / (p + 1.0), min(beta * (p + 1.0) / pm1, 1.0), delta)
    return min(general, _search(clones, eps0, delta)[0])


@dataclass(frozen=True)
class Guarantees:
    """Local, sampled and shuffled guarantees of one release, side by side, each with its conditions.

    Parameters
    ----------
    local : float
        The record's epsilon (the manifest's).
    sampled : float, optional
        The epsilon under the sampling design (``None``: no design declared).
    sampling_conditions : str, optional
        The conditions of ``sampled``.
    shuffled : float, optional
        The central epsilon of the shuffled file (``None``: not shuffled, or a condition fails).
    delta : float, optional
        The central delta.
    shuffle_conditions : str, optional
        The conditions of ``shuffled``, or the one that fails.
    clones : int, optional
        The ``n`` of the shuffle bound: the fewest released records that agree on what is shown exactly.
    local_given : bool
        ``local`` holds given the structure (:attr:`pramkit.ledger.Guarantee.given_structure`), and says so.
    """

    local: float
    sampled: float | None = None
    sampling_conditions: str | None = None
    shuffled: float | None = None
    delta: float | None = None
    shuffle_conditions: str | None = None
    clones: int | None = None
    local_given: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The guarantees as JSON values (``inf`` as the text ``"inf"``)."""
        from pramkit.ledger import epsilon_to_json

        return {
            "local_epsilon": epsilon_to_json(self.local),
            "sampled_epsilon": None if self.sampled is None else epsilon_to_json(self.sampled),
            "sampling_conditions": self.sampling_conditions,
            "shuffled_epsilon": None if self.shuffled is None else epsilon_to_json(self.shuffled),
            "shuffled_delta": self.delta,
            "shuffle_conditions": self.shuffle_conditions,
            "shuffled_records": self.clones,
            **({"local_epsilon_is_given_structure": True} if self.local_given else {}),
        }

    def lines(self) -> list[str]:
        """One line per guarantee, for people (epsilons rounded up).

        Examples
        --------
        >>> Guarantees(6.0, by_sampling(6.0, 0.05), "a secret sample").lines()[1]
        'sampled: epsilon 3.051 if a secret sample'
        """
        from pramkit.ledger import epsilon_figure, fmt_epsilon

        out = [f"local: epsilon {epsilon_figure(self.local, self.local_given)} per record, whoever reads the file"]
        if self.sampled is not None:
            out.append(f"sampled: epsilon {fmt_epsilon(self.sampled)} if {self.sampling_conditions}")
        if self.shuffled is not None:
            out.append(f"shuffled: epsilon {fmt_epsilon(self.shuffled)}, delta {self.delta:g} (central) "
                       f"because {self.shuffle_conditions}")
        elif self.shuffle_conditions is not None:
            out.append(f"shuffled: no central figure: {self.shuffle_conditions}")
        return out


@overload
def sampled_guarantee(local: float, sampling: Sampling) -> tuple[float, str]: ...
@overload
def sampled_guarantee(local: float, sampling: None) -> tuple[None, None]: ...
@overload
def sampled_guarantee(local: float, sampling: Sampling | None) -> tuple[float | None, str | None]: ...
def sampled_guarantee(local: float, sampling: Sampling | None) -> tuple[float | None, str | None]:
    """The sampled epsilon of a release whose record epsilon is ``local`` and its conditions.

    Examples
    --------
    >>> eps, words = sampled_guarantee(3.0, Sampling.parse("srswor:5000/100000"))
    >>> f"{eps:.4f}", words.startswith("the file is a simple random sample")
    ('0.6700', True)
    >>> sampled_guarantee(3.0, Sampling.parse("stratified:0.01,0.05"))[1].endswith(
    ...     "(per stratum: rate 0.01: epsilon 0.1747, rate 0.05: epsilon 0.6701)")
    True
    """
    if sampling is None:
        return None, None
    from pramkit.ledger import fmt_epsilon

    per_stratum = "" if len(sampling.rates) == 1 else " (per stratum: " + ", ".join(
        f"rate {q:g}: epsilon {fmt_epsilon(by_sampling(local, q))}" for q in sampling.rates) + ")"
    return by_sampling(local, sampling.rate), sampling.conditions() + per_stratum


def sampled_ledger(manifest: Any) -> dict[str, Any]:
    """The ledger's fields of the sampling design the manifest records (none without one).

    ``sampled_epsilon`` (the record epsilon amplified by sampling, rounded up) and
    ``sampled_conditions`` (its conditions, in words); derived, so a manifest that is read
    recomputes them.

    Examples
    --------
    >>> from pramkit.ledger import Ledger
    >>> from pramkit.manifest import Manifest
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 3.0)}, ledger=Ledger(frequencies="none"),
    ...                 input={"sampling": {"design": "srswor", "rates": [0.05], "population": 100_000,
    ...                                     "sample": 5_000}})
    >>> f"{m.to_dict()['ledger']['sampled_epsilon']:.4f}", sampled_ledger(Manifest.of({"sex": m["sex"].matrix}))
    ('0.6700', {})
    """
    from pramkit.ledger import epsilon_to_json

    if not manifest.input.get("sampling"):
        return {}
    sampled, words = sampled_guarantee(manifest.record_epsilon_given_structure, Sampling.from_dict(manifest.input["sampling"]))
    return {"sampled_epsilon": epsilon_to_json(sampled), "sampled_conditions": words}


def check_read_sampling(manifest: Any, ledger: Any) -> None:
    """Check a manifest's sampling design as it is read: its ``input["sampling"]`` and the
    ``ledger.sampled_epsilon`` it states (``ledger``: the ledger object as read, or ``None``).

    Raises
    ------
    ManifestError
        The design is malformed (:meth:`Sampling.from_dict`), or the stated sampled epsilon is not
        the one its design gives, naming the field.

    Examples
    --------
    A manifest written by the design, then its sampled epsilon forged:

    >>> from pramkit.datasets import census
    >>> from pramkit.release.choices import DesignChoices
    >>> m = DesignChoices(epsilon=3.0, method="rr", sampling="srswor:5000/100000").release(census(5_000), ["sex"]).manifest
    >>> check_read_sampling(m, m.to_dict()["ledger"])
    >>> try:
    ...     check_read_sampling(m, {"sampled_epsilon": 0.1})
    ... except ManifestError as exc:
    ...     print(str(exc).split(" gives")[0])
    field 'ledger.sampled_epsilon' states 0.1 but the sampling design (input.sampling)
    """
    if "sampling" not in manifest.input:
        if isinstance(ledger, dict) and ledger.get("sampled_epsilon") is not None:
            raise ManifestError("field 'ledger.sampled_epsilon' is stated but the manifest has no sampling design "
                                "(input.sampling)")
        return
    try:
        stated = sampled_ledger(manifest)["sampled_epsilon"]
    except (ParameterError, KeyError, TypeError, ValueError) as exc:
        raise ManifestError(f"field 'input.sampling': {exc}") from None
    if not isinstance(ledger, dict) or "sampled_epsilon" not in ledger:
        return
    value = ledger["sampled_epsilon"]
    if value != stated and not (isinstance(value, (int, float)) and not isinstance(value, bool)
                                and isinstance(stated, float) and abs(value - stated) <= 1e-9 * max(1.0, stated)):
        raise ManifestError(f"field 'ledger.sampled_epsilon' states {value!r} but the sampling design "
                            f"(input.sampling) gives {stated!r}")


def shuffle_failures(columns: Sequence[str], perturbed: Sequence[str], public: Sequence[str],
                     households: Sequence[str], *, shuffled: bool) -> list[str]:
    """Why a release gets no central figure: each failing condition, naming the column.

    Parameters
    ----------
    columns : sequence of str
        The released file's columns.
    perturbed : sequence of str
        The columns the manifest perturbs.
    public : sequence of str
        Columns declared public (``--public-columns``).
    households : sequence of str
        Household or id columns of the manifest (released as they are, they link records).
    shuffled : bool
        Whether the rows were written in the key's random order.

    Returns
    -------
    list of str
        Empty when every condition holds.

    Examples
    --------
    >>> shuffle_failures(["age", "id"], ["age"], [], [], shuffled=True)
    ["column 'id' is released unperturbed and is not declared public (--public-columns)"]
    """
    out = [] if shuffled else ["the rows are in the original order (apply --shuffle writes them in a random order)"]
    for col in households:
        if col in columns:
            out.append(f"column {col!r} is a household or id column: released, it links records and "
                       "identifies them")
    bare = [col for col in columns if col not in perturbed and col not in public and col not in households]
    if bare:
        out.append(f"column{'s' if len(bare) > 1 else ''} {', '.join(map(repr, bare))} "
                   f"{'are' if len(bare) > 1 else 'is'} released unperturbed and "
                   f"{'are' if len(bare) > 1 else 'is'} not declared public (--public-columns)")
    return out


def shuffled_guarantee(local: float, design: float, n: int, failures: Sequence[str], *,
                       matrix: ArrayLike | None = None, delta: float = DEFAULT_DELTA,
                       clones: Any = None) -> tuple[float | None, str]:
    """The central epsilon of a shuffled release and its conditions, or ``None`` and the failing one.

    ``design`` (the design step's epsilon, spent on the whole file) adds to the shuffled bound of
    the perturbation's ``local`` epsilon; ``clones`` (the record's
    :class:`pramkit.privacy.shuffle_bound.CloneParameters`, from its matrices) gives the clone bound
    with the matrices' clone probability (:func:`pramkit.privacy.shuffle_bound.shuffled_epsilon`, what
    :func:`release_guarantees` states); without it, ``matrix`` (one variable's matrix) gives the
    total-variation bound and neither the general one of Feldman, McMillan and Talwar (2021).

    Examples
    --------
    >>> eps, words = shuffled_guarantee(4.0, 0.0, 100_000, [])
    >>> 0.1675 <= eps <= 0.1728, words.startswith("every released column")
    (True, True)
    >>> shuffled_guarantee(4.0, 0.0, 100_000, ["column 'id' is released unperturbed"])
    (None, "column 'id' is released unperturbed")
    """
    from pramkit.privacy.exact import sum_up

    if failures:
        return None, "; ".join(failures)
    if clones is not None:
        from pramkit.privacy.shuffle_bound import shuffled_epsilon

        bound = shuffled_epsilon(clones, n, delta).epsilon
        source = "clone bound with the clone probability of the PRAM matrices, computed exactly"
    else:
        bound = by_shuffling(local, n, delta) if matrix is None else by_shuffling_matrix(matrix, n, delta)
        source = "Feldman, McMillan and Talwar 2021, numerical bound"
    return sum_up([design, bound]), (
        f"every released column is perturbed or public, no household or id column is released, and the "
        f"{n:,} record{'s' if n > 1 else ''} that agree on what is shown exactly (the fewest) were written in a random order drawn from the "
        f"secret key ({source})"
        + (", plus the design step's epsilon" if design else ""))


def record_clones(manifest: Any) -> Any:
    """The clone parameters of a manifest's record (:func:`pramkit.privacy.shuffle_bound.clone_parameters`).

    Each variable's stated epsilon (at least its matrix's and its realised law's); its matrix's columns
    are read where its matrix is the law a record's values are drawn from: no strata, not derived from
    another release, and, for several columns perturbed jointly, missing values a category (a record
    with one missing column kept is drawn from a margin).  Any other variable counts as a generic
    eps-DP one.  ``p`` is ``e`` to the perturbation's epsilon.

    Examples
    --------
    >>> from pramkit.manifest import Manifest
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], math.log(3.0))})
    >>> round(record_clones(m).w, 9)
    0.5
    """
    from pramkit.privacy.shuffle_bound import clone_parameters

    matrices = [v.matrix if not v.given and v.applied_to is None and (not v.is_joint or v.missing == "category")
                else None for v in manifest.variables]
    return clone_parameters(matrices, [v.epsilon for v in manifest.variables])


def check_shuffle(manifest: Any, columns: Sequence[str], public_columns: Sequence[str], *, shuffle: bool) -> None:
    """Refuse a shuffled release that cannot be one, before anything is written.

    Parameters
    ----------
    manifest : pramkit.manifest.Manifest
        The release's manifest.
    columns : sequence of str
        The file's columns.
    public_columns : sequence of str
        The columns declared public.
    shuffle : bool
        Whether the rows are to be shuffled.

    Raises
    ------
    ParameterError
        ``public_columns`` without ``shuffle``; a public column that is not in the file or is
        perturbed; ``shuffle`` with a household column in the file (the household id links the
        records a shuffle is meant to separate).

    Examples
    --------
    >>> from pramkit.manifest import Manifest
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 1.0)})
    >>> check_shuffle(m, ["sex", "region"], ["region"], shuffle=True)
    >>> check_shuffle(m, ["sex"], ["sex"], shuffle=True)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --public-columns: column 'sex' is perturbed by the manifest; declare only columns released as they are
    """
    if public_columns and not shuffle:
        raise ParameterError("--public-columns only serves a shuffled release: add --shuffle")
    for col in public_columns:
        if col not in columns:
            raise ParameterError(f"--public-columns: column {col!r} is not in the file")
        if col in manifest.columns:
            raise ParameterError(f"--public-columns: column {col!r} is perturbed by the manifest; declare only "
                                 "columns released as they are")
    if shuffle:
        for v in manifest.variables:
            if v.unit and v.unit in columns:
                raise ParameterError(f"--shuffle with household column {v.unit!r}: a shuffled release cannot keep "
                                     "the household id that links its records (drop the column, or do not shuffle)")


def release_guarantees(manifest: Any, *, columns: Sequence[str] | None = None,
                       public_columns: Sequence[str] = (), shuffled: bool = False, clones: int | None = None,
                       sampling: Sampling | None = None, delta: float = DEFAULT_DELTA) -> Guarantees:
    """The local, sampled and shuffled guarantees of a release, side by side.

    Parameters
    ----------
    manifest : pramkit.manifest.Manifest
        The release's manifest; its ``input["sampling"]`` is the sampling design unless
        ``sampling`` is given.
    columns : sequence of str, optional
        The released file's columns (``None``: no release to judge, no shuffled line).
    public_columns : sequence of str
        Columns declared public.
    shuffled : bool
        Whether the rows were written in the key's order.
    clones : int, optional
        The fewest released records that agree on what is shown exactly
        (:class:`pramkit.engine.shuffle.CloneGroups`).
    sampling : Sampling, optional
        The sampling design.
    delta : float
        The central delta.

    Returns
    -------
    Guarantees

    Examples
    --------
    >>> from pramkit.manifest import Manifest
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 3.0)})
    >>> g = release_guarantees(m, columns=["sex", "id"], shuffled=True, clones=1000,
    ...                        sampling=Sampling.parse("srswor:5000/100000"))
    >>> f"{g.sampled:.4f}", g.shuffled, g.shuffle_conditions
    ('0.6700', None, "column 'id' is released unperturbed and is not declared public (--public-columns)")
    >>> g = release_guarantees(m, columns=["sex"], shuffled=True, clones=1000)
    >>> g.shuffled < 3.0
    True
    """
    if sampling is None and manifest.input.get("sampling"):
        sampling = Sampling.from_dict(manifest.input["sampling"])
    from pramkit.ledger import release_guarantee

    stated = release_guarantee(manifest)  # the ledger's figure and qualifier, as every surface states it
    local = stated.record_epsilon
    sampled, words = sampled_guarantee(local, sampling)
    if columns is None:
        return Guarantees(local, sampled, words, local_given=stated.given_structure)
    households = [v.unit for v in manifest.variables if v.unit]
    failures = shuffle_failures(columns, manifest.columns, public_columns, households, shuffled=shuffled)
    failures += [f.reveals for f in manifest.exact_facts if not f.covered]
    design = 0.0 if manifest.ledger is None else manifest.ledger.design_epsilon
    central, conditions = shuffled_guarantee(manifest.perturbation_epsilon, design, max(int(clones or 1), 1),
                                             failures, delta=delta, clones=record_clones(manifest))
    return Guarantees(local, sampled, words, central, None if central is None else delta, conditions,
                      None if clones is None else int(clones), stated.given_structure)


def check_statement(sampling: str | None, population: int | None) -> None:
    """Check the form of ``--sampling TEXT`` and ``--population N`` before any data are read.

    Raises
    ------
    ParameterError
        Both given with another design than Poisson; Poisson without ``--population``; a bad form
        or rate.

    Examples
    --------
    >>> check_statement("srswor:500/100000", None), check_statement(None, None)
    (None, None)
    >>> check_statement("srswor:500/100000", 100000)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: give --sampling or --population, not both (--population goes with poisson:Q)
    """
    _statement(sampling, population)


def _statement(sampling: str | None, population: int | None) -> Sampling | None:
    """The design ``--sampling`` states, its combination with ``--population`` checked (rows not yet known)."""
    design = None if sampling is None else Sampling.parse(sampling)
    if design is not None and design.design != "poisson" and population is not None:
        raise ParameterError("give --sampling or --population, not both (--population goes with poisson:Q)")
    if design is not None and design.design == "poisson" and population is None:
        raise ParameterError(f"--sampling {sampling} needs --population N, the size of the population sampled: a "
                             "Poisson sample is amplified given its size, n of N (one that happens to hold everyone "
                             "is not)")
    return design


def sampling_of(sampling: str | None, population: int | None, rows: int | None, *,
                file: str = "the file") -> Sampling | None:
    """The sampling design of ``--sampling TEXT`` or ``--population N``, checked against the file's ``rows``.

    The sample is the file: ``M`` of ``srswor:M/N`` must be its row count (:meth:`Sampling.check_rows`),
    and ``--population N`` alone is a simple random sample of its rows from ``N``.

    Raises
    ------
    ParameterError
        Both given; ``--population`` or ``srswor:M/N`` without a known row count; a bad form or rate;
        ``M`` other than the rows; ``N`` below the rows.

    Examples
    --------
    >>> sampling_of(None, 20_000, 1_000).rate, sampling_of("poisson:0.1", 9_000, 1_000).rate, sampling_of(None, None, 5)
    (0.05, 0.1111111111111111, None)
    >>> sampling_of("poisson:0.1", None, 1_000)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --sampling poisson:0.1 needs --population N, the size of the population sampled: a Poisson sample is amplified given its size, n of N (one that happens to hold everyone is not)
    >>> sampling_of("srswor:500/100000", None, 1_031)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: --sampling srswor:500/100000 states a sample of 500 records but the file has 1,031 rows: M is the file's row count (write --sampling srswor:1031/100000, or --population 100000)
    """
    design = _statement(sampling, population)
    if design is not None and design.design == "stratified":
        return design
    if design is None and population is None:
        return None
    if rows is None:
        what = "--population" if design is None or design.design == "poisson" else f"--sampling {sampling}"
        raise ParameterError(f"{what} needs the released file's row count (the sample is the file): give --released "
                             "FILE (its receipt holds it)")
    if design is not None and design.design == "srswor":
        design.check_rows(int(rows), file)
        return design
    assert population is not None
    srs = Sampling.without_replacement(int(rows), int(population))
    return srs if design is None else Sampling("poisson", design.rates, population=srs.population, sample=srs.sample)


def stated_sampling(manifest: Any, rows: int, file: str, label: str = "the manifest") -> Sampling | None:
    """The sampling design a manifest states, checked against the ``rows`` of the file it is applied to.

    Parameters
    ----------
    manifest : pramkit.manifest.Manifest
        Its ``input["sampling"]`` (none: ``None``).
    rows : int
        The row count of the file the manifest releases (or released: its receipt's).
    file : str
        That file, as the message names it.
    label : str
        The manifest, as the message names it.

    Raises
    ------
    DataError
        The design's sample is not ``rows`` records (:meth:`Sampling.check_rows`).

    Examples
    --------
    >>> from pramkit.manifest import Manifest
    >>> from pramkit.design.classic import randomized_response
    >>> m = Manifest.of({"sex": randomized_response(["f", "m"], 3.0)},
    ...                 input={"sampling": Sampling.parse("srswor:1031/100000").to_dict()})
    >>> stated_sampling(m, 1031, "'c.csv'").rate
    0.01031
    >>> stated_sampling(m, 2000, "'d.csv'", "manifest 'm.json'")
    Traceback (most recent call last):
    ...
    pramkit.errors.DataError: manifest 'm.json' states a sample of 1,031 records (input.sampling: srswor:1031/100000) but 'd.csv' has 2,000 rows: apply it to the file it was designed for, or design again for this file
    """
    if not manifest.input.get("sampling"):
        return None
    design = Sampling.from_dict(manifest.input["sampling"])
    design.check_rows(int(rows), file, stated=label)
    return design


def declare_sampling(release: Any, *, sampling: str | None = None, population: int | None = None) -> Any:
    """The release with its sampling design in the manifest's ``input["sampling"]`` (public).

    Parameters
    ----------
    release : pramkit.release.record.Release
        A designed release (its record knows the file's rows).
    sampling, population
        ``--sampling`` and ``--population`` (:func:`sampling_of`).

    Returns
    -------
    Release
        ``release`` itself when neither is given.

    Examples
    --------
    >>> import random, pramkit
    >>> from pramkit.datasets import census, CENSUS_VARIABLES
    >>> plan = pramkit.plan_release(["sex"], epsilon=1.0, categories=CENSUS_VARIABLES)
    >>> release = pramkit.design_planned(census(2_000), plan, rng=random.Random(1))
    >>> declare_sampling(release, population=40_000).manifest.input["sampling"]["rates"]
    [0.05]
    >>> declare_sampling(release, population=1_000)
    Traceback (most recent call last):
    ...
    pramkit.errors.ParameterError: the population N = 1,000 is smaller than the file (2,000 records); give the size of the population the file was drawn from
    """
    record = release.record
    design = sampling_of(sampling, population, record.rows, file=repr(record.data) if record.sha256 else record.data)
    if design is None:
        return release
    manifest = dataclasses_replace(release.manifest, input={**release.manifest.input, "sampling": design.to_dict()})
    return dataclasses_replace(release, manifest=manifest)
